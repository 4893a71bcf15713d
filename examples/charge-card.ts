/**
 * A complete MCP server built with the Idem library, on stdio.
 *
 *   node --import tsx examples/charge-card.ts        (PROCESSOR_URL=http://… to use a real processor)
 *
 * Without PROCESSOR_URL it starts the demo's counting payment processor on
 * loopback, so it runs anywhere. Point any MCP client at it; call `charge_card`
 * twice with the same order_id and the processor counts one charge.
 */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createChargeCardServer } from '../src/demo/charge-card-server.js';
import { PaymentProcessor } from '../src/demo/processor.js';
import { Idem } from '../src/index.js';

const processorUrl = process.env.PROCESSOR_URL ?? (await new PaymentProcessor().start());
const idem = await Idem.open(); // SQLite under IDEM_DATA_DIR, or the per-user data directory
const server = createChargeCardServer({ idem, processorUrl, timeout: '10s' });
await idem.connect(server, new StdioServerTransport());
process.stderr.write(`charge-card example on stdio; processor at ${processorUrl}\n`);
