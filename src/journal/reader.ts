import type { ActivityEntry, JournalStream } from './events.js';

/**
 * What the journal's readers (head signing) need from whatever holds the
 * journal. Declared here, below the store, so the journal never imports the
 * store: every ExecutionStore is one (store/types.ts extends it).
 */
export interface JournalReader {
  /** Journal entries with seq > afterSeq, in order (default stream: activity). */
  readJournal(afterSeq?: number, limit?: number, stream?: JournalStream): Promise<ActivityEntry[]>;
  /** The last entry's seq and hash (what a signed head covers), if the stream has any. */
  journalHead(stream?: JournalStream): Promise<{ seq: number; hash: string } | undefined>;
  /**
   * Each writer's chain end, for stores whose writers append to chains of
   * their own (PostgreSQL). A store without it has one chain, chain 0, whose
   * head is journalHead.
   */
  journalChains?(stream?: JournalStream): Promise<{ chain: number; seq: number; hash: string }[]>;
}
