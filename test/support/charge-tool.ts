/**
 * The gateway's `http_tools` entry that charges an order at a PaymentProcessor (src/demo/processor.ts)
 * with the key of credential `pay`: the HTTP action tool the kill and fleet tests count charges of.
 */
export function chargeHttpTool(base: string, contract: Record<string, unknown>) {
  return {
    description: 'Charge an order once.',
    method: 'POST',
    url: `${base}/charges`,
    body: { order_id: '{order_id}', amount_cents: '{amount_cents}', currency: 'EUR' },
    credential: { name: 'pay', scheme: 'bearer' },
    allow: { addresses: ['127.0.0.1'] },
    contract: { scope: { business_key: 'order_id' }, timeout: '60s', ...contract },
  };
}
