// An MCP server written with the official TypeScript server SDK
// (@modelcontextprotocol/server 2.x), for askpoint's e2e test: its tool
// book_trip asks, with MCP 2026-07-28's input_required, for a travel class
// (a choice with titles), a number of nights (an integer with bounds) and
// whether the fare is refundable (a boolean), then books. It prints
// "listening on URL" once it serves, and a line per call it answers.
import http from 'node:http';
import { McpServer, createMcpHandler, fromJsonSchema, inputRequired, inputResponse } from '@modelcontextprotocol/server';

const prefs = {
    type: 'object',
    required: ['class', 'nights'],
    properties: {
        class: { type: 'string', title: 'Class', oneOf: [{ const: 'eco', title: 'Economy' }, { const: 'biz', title: 'Business' }] },
        nights: { type: 'integer', title: 'Nights', minimum: 1, maximum: 14 },
        refund: { type: 'boolean', title: 'Refundable' }
    }
};

function build() {
    const server = new McpServer({ name: 'ts-travel', version: '1.0.0' });
    server.registerTool(
        'book_trip',
        {
            title: 'Book a trip',
            description: 'Books a trip to a city.',
            inputSchema: fromJsonSchema({ type: 'object', required: ['city'], properties: { city: { type: 'string' } } })
        },
        async ({ city }, ctx) => {
            const r = inputResponse(ctx.mcpReq.inputResponses, 'prefs');
            if (r.kind !== 'elicit') {
                return inputRequired({
                    inputRequests: { prefs: inputRequired.elicit({ message: `How do you want to travel to ${city}?`, requestedSchema: prefs }) },
                    requestState: `round-1:${city}`
                });
            }
            console.log(`call ${r.action} ${JSON.stringify(r.content ?? {})}`);
            if (r.action !== 'accept') {
                return { content: [{ type: 'text', text: `Nothing booked: you chose ${r.action}.` }] };
            }
            const ref = `TRIP-${city}-${r.content.class}-${r.content.nights}`;
            return { content: [{ type: 'text', text: `Booked ${ref}` }], structuredContent: { ref, refund: r.content.refund ?? false } };
        }
    );
    return server;
}

const handler = createMcpHandler(() => build());

const httpServer = http.createServer(async (req, res) => {
    try {
        const chunks = [];
        for await (const c of req) chunks.push(c);
        const body = chunks.length ? Buffer.concat(chunks) : undefined;
        const request = new Request(`http://${req.headers.host}${req.url}`, {
            method: req.method,
            headers: req.headers,
            body: req.method === 'GET' || req.method === 'HEAD' ? undefined : body
        });
        const response = await handler.fetch(request);
        res.writeHead(response.status, Object.fromEntries(response.headers));
        if (response.body) {
            for await (const c of response.body) res.write(c);
        }
        res.end();
    } catch (err) {
        console.error(err);
        res.writeHead(500).end();
    }
});

httpServer.listen(0, '127.0.0.1', () => {
    console.log(`listening on http://127.0.0.1:${httpServer.address().port}/mcp`);
});
process.on('SIGTERM', () => httpServer.close(() => process.exit(0)));
