// Drives askpoint mcp's expense tool with the official MCP TypeScript client.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const endpoint = new URL(process.argv[2]);

async function run(name, versionNegotiation, answers) {
  const client = new Client({ name: 'askpoint-e2e-' + name, version: '1.0.0' },
    { capabilities: { elicitation: { form: {} } }, ...(versionNegotiation && { versionNegotiation }) });
  const asked = [];
  client.setRequestHandler('elicitation/create', async (request) => {
    asked.push(request.params.message);
    const a = answers.shift();
    if (!a) throw new Error('asked more often than expected: ' + request.params.message);
    return a;
  });
  await client.connect(new StreamableHTTPClientTransport(endpoint));
  try {
    const res = await client.callTool({ name: 'expense_agent', arguments: { message: 'File my taxi receipt' } });
    return { res, asked, version: client.getNegotiatedProtocolVersion?.() };
  } finally {
    await client.close();
  }
}

const missing = (date) => ({ action: 'accept', content: { amount: 42, currency: 'EUR', date, costCentre: 'CC-4410' } });

// A wrong date (the form cannot say the pattern) is refused before it is sent, then a right one.
let { res, asked } = await run('modern', { mode: { pin: '2026-07-28' } }, [missing('Tuesday'), missing('2027-03-02')]);
if (res.isError || asked.length !== 2 || !asked[1].includes('That answer was not sent')) {
  throw new Error('wrong then right: ' + JSON.stringify({ res, asked }));
}
console.log(`ok modern wrong-then-right expense=${res.structuredContent.expenseId} date=${res.structuredContent.date}`);

({ res, asked } = await run('decline', { mode: { pin: '2026-07-28' } }, [{ action: 'decline' }]));
if (!res.isError || !res.content[0].text.includes('rejected')) {
  throw new Error('decline: ' + JSON.stringify(res));
}
console.log('ok modern decline ' + res._meta['dev.askpoint/taskState']);

// A 2025-11-25 client gets the same rounds as elicitation/create requests within the one call.
({ res, asked } = await run('legacy', undefined, [missing('Tuesday'), missing('2027-03-03')]));
if (res.isError || asked.length !== 2 || !asked[1].includes('That answer was not sent')) {
  throw new Error('legacy: ' + JSON.stringify({ res, asked }));
}
console.log(`ok legacy elicitation expense=${res.structuredContent.expenseId} date=${res.structuredContent.date}`);
