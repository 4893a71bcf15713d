import { durationMs } from '../../contracts/duration.js';
import type { ReceiptBookOptions } from '../../receipts/receipt-book.js';
import type { GatewayConfig } from './config.js';

/** The config's `receipts:` section as the receipt book takes it; what it leaves out, the book's defaults. */
export function receiptBookOptions(config: GatewayConfig): ReceiptBookOptions {
  const receipts = config.receipts;
  return {
    ...(receipts?.max ? { maxReceipts: receipts.max } : {}),
    ...(receipts?.max_per_actor ? { maxReceiptsPerActor: receipts.max_per_actor } : {}),
    ...(receipts?.retention !== undefined
      ? { retentionMs: durationMs(receipts.retention, 'receipts.retention') }
      : {}),
  };
}
