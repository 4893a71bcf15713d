/**
 * The demo's upstream: the charge_card server built with the library, on
 * stdio, for `idem demo` to put behind the gateway. PROCESSOR_URL names the
 * (counting) payment processor; IDEM_DATA_DIR its own store.
 */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { Idem } from '../library/idem.js';
import { createChargeCardServer } from './charge-card-server.js';

const processorUrl = process.env.PROCESSOR_URL;
if (!processorUrl) {
  process.stderr.write('charge-card upstream: PROCESSOR_URL is not set\n');
  process.exit(2);
}
const idem = await Idem.open();
// The gateway in front owns the caller-facing timeout; here the charge may take as long as it takes.
const server = createChargeCardServer({ idem, processorUrl, timeout: '60s', quickTimeout: '60s' });
await idem.connect(server, new StdioServerTransport());
