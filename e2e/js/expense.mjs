// Interoperability check: drives askpoint's expense agent with the official
// A2A JavaScript SDK (@a2a-js/sdk, pinned in package.json), over both the
// JSON-RPC and the HTTP+JSON (REST) transports, blocking and streaming; then
// the same SDK calls the planning workflow (a group chat of a planner and the
// expense agent, served at /planning) as an agent: the expense agent's
// question suspends the workflow with one request about the expense agent,
// which the caller answers like any other question.
//
// Usage: node expense.mjs BASE_URL        (e.g. http://127.0.0.1:8420)
//
// Prints one line per run, e.g.
//   ok jsonrpc blocking task=... expense=EXP-...
//   ok planning jsonrpc blocking task=... expense=EXP-...
// and exits non-zero with a message on stderr at the first mismatch.
// EXPENSE_E2E_VERBOSE=1 also prints each stream's event sequence on stderr.

import { randomUUID } from 'node:crypto';
import { Role, TaskState, taskStateToJSON, roleToJSON } from '@a2a-js/sdk';
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';

const REQUEST_TEXT = 'File my taxi receipt from Tuesday, 42 euros';
const WANT_OPTIONS = ['CC-4410', 'CC-4420'];
const ANSWER = 'CC-4410';
const CALL_TIMEOUT_MS = 15_000;

class Mismatch extends Error {}

function check(cond, what, got) {
  if (!cond) {
    throw new Mismatch(got === undefined ? what : `${what}; got ${JSON.stringify(got)}`);
  }
}

// Every request the SDK makes goes through this fetch. It does not add the
// A2A-Version header: it checks that the SDK sent A2A-Version: 1.0 by itself,
// and keeps the last raw response bodies' starts for error messages.
const seen = [];
async function checkingFetch(input, init) {
  const url = String(input instanceof Request ? input.url : input);
  const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
  const version = headers.get('A2A-Version');
  if (version !== '1.0') {
    throw new Mismatch(`the SDK sent ${init?.method ?? 'GET'} ${url} with A2A-Version ${JSON.stringify(version)}, want "1.0"`);
  }
  const res = await fetch(input, init);
  seen.push(`${init?.method ?? 'GET'} ${url} -> ${res.status} ${res.headers.get('Content-Type') ?? ''}`);
  if (seen.length > 20) seen.shift();
  return res;
}

const BINDINGS = {
  jsonrpc: 'JSONRPC',
  rest: 'HTTP+JSON',
};

async function newClient(base, kind, agent = 'expense') {
  const binding = BINDINGS[kind];
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [
        new JsonRpcTransportFactory({ fetchImpl: checkingFetch }),
        new RestTransportFactory({ fetchImpl: checkingFetch }),
      ],
      preferredTransports: [binding],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl: checkingFetch }),
    }),
  );
  // The card lives at BASE/AGENT/.well-known/agent-card.json; the SDK's
  // default card path is relative, so a base ending in "/" resolves there.
  const client = await factory.createFromUrl(`${base}/${agent}/`);
  check(client.transport.protocolName === binding, `client for ${kind}: SDK picked transport ${client.transport.protocolName}, want ${binding}`);
  check(client.protocolVersion === '1.0', `client for ${kind}: protocolVersion`, client.protocolVersion);
  return client;
}

function textPart(text) {
  return { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' };
}

function dataPart(data) {
  return { content: { $case: 'data', value: data }, metadata: undefined, filename: '', mediaType: 'application/json' };
}

function userMessage(parts, task) {
  return {
    messageId: randomUUID(),
    contextId: task?.contextId ?? '',
    taskId: task?.id ?? '',
    role: Role.ROLE_USER,
    parts,
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

function request(message) {
  return { tenant: '', message, configuration: undefined, metadata: undefined };
}

function opts() {
  return { signal: AbortSignal.timeout(CALL_TIMEOUT_MS) };
}

function stateName(status) {
  return status ? taskStateToJSON(status.state) : '(no status)';
}

// checkQuestion checks an input-required status and returns its questionId.
function checkQuestion(status, where) {
  check(status, `${where}: task has no status`);
  check(status.state === TaskState.TASK_STATE_INPUT_REQUIRED, `${where}: state is ${stateName(status)}, want TASK_STATE_INPUT_REQUIRED`);
  const msg = status.message;
  check(msg, `${where}: input-required status has no message`);
  check(msg.role === Role.ROLE_AGENT, `${where}: question's role is ${roleToJSON(msg.role)}, want ROLE_AGENT`);
  const text = msg.parts.find((p) => p.content?.$case === 'text');
  check(text && text.content.value.length > 0, `${where}: question has no text part`, msg.parts);
  const data = msg.parts.find((p) => p.content?.$case === 'data');
  check(data, `${where}: question has no data part`, msg.parts);
  check(data.mediaType === 'application/json', `${where}: data part's mediaType`, data.mediaType);
  const q = data.content.value;
  check(q && typeof q === 'object', `${where}: data part is not an object`, q);
  check(typeof q.questionId === 'string' && q.questionId.length > 0, `${where}: questionId`, q.questionId);
  check(typeof q.expires === 'string' && !Number.isNaN(Date.parse(q.expires)), `${where}: expires`, q.expires);
  check(q.answerSchema && typeof q.answerSchema === 'object', `${where}: answerSchema`, q.answerSchema);
  check(Array.isArray(q.options), `${where}: options is not an array`, q.options);
  const values = q.options.map((o) => o?.value);
  check(JSON.stringify(values) === JSON.stringify(WANT_OPTIONS), `${where}: option values, want ${JSON.stringify(WANT_OPTIONS)}`, values);
  return q.questionId;
}

// checkExpenseArtifact finds the "expense" artifact and returns its expenseId.
function checkExpenseArtifact(artifacts, where) {
  const art = artifacts.find((a) => a.name === 'expense');
  check(art, `${where}: no artifact named "expense"`, artifacts.map((a) => a.name));
  check(art.artifactId, `${where}: expense artifact has no artifactId`);
  const data = art.parts.find((p) => p.content?.$case === 'data');
  check(data, `${where}: expense artifact has no data part`, art.parts);
  const e = data.content.value;
  check(e && typeof e.expenseId === 'string' && /^EXP-[0-9A-F]+$/.test(e.expenseId), `${where}: expenseId`, e);
  check(e.costCentre === ANSWER, `${where}: expense's costCentre, want ${ANSWER}`, e.costCentre);
  check(e.amount === 42, `${where}: expense's amount, want 42`, e.amount);
  return e.expenseId;
}

function checkTask(result, where) {
  check(result && typeof result === 'object', `${where}: no result`, result);
  check(!('messageId' in result), `${where}: got a Message, want a Task`, result);
  check(typeof result.id === 'string' && result.id.length > 0, `${where}: task has no id`, result);
  check(typeof result.contextId === 'string' && result.contextId.length > 0, `${where}: task has no contextId`, result);
  return result;
}

async function runBlocking(client, kind) {
  const where = `${kind} blocking`;
  const first = checkTask(await client.sendMessage(request(userMessage([textPart(REQUEST_TEXT)])), opts()), `${where} send`);
  const questionId = checkQuestion(first.status, `${where} send`);

  const answer = userMessage([dataPart({ questionId, costCentre: ANSWER })], first);
  const done = checkTask(await client.sendMessage(request(answer), opts()), `${where} answer`);
  check(done.id === first.id, `${where} answer: task id changed from ${first.id}`, done.id);
  check(done.contextId === first.contextId, `${where} answer: contextId changed from ${first.contextId}`, done.contextId);
  check(done.status?.state === TaskState.TASK_STATE_COMPLETED, `${where} answer: state is ${stateName(done.status)}, want TASK_STATE_COMPLETED`, done.status);
  const expenseId = checkExpenseArtifact(done.artifacts, `${where} answer`);
  return { task: done, expenseId };
}

// collect reads a stream to its end, following the task's state.
async function collect(stream, where, knownTask) {
  const events = [];
  let task = knownTask ? { id: knownTask.id, contextId: knownTask.contextId } : undefined;
  let status;
  const artifacts = [];
  for await (const ev of stream) {
    events.push(ev.payload?.$case ?? '(empty)');
    const p = ev.payload;
    check(p, `${where}: stream event with no payload (events so far ${events.join(',')})`);
    if (events.length === 1 && !knownTask) {
      check(p.$case === 'task', `${where}: first stream event is ${p.$case}, want task`);
    }
    switch (p.$case) {
      case 'task':
        checkTask(p.value, where);
        if (task) check(p.value.id === task.id, `${where}: task event for another task`, p.value.id);
        task = { id: p.value.id, contextId: p.value.contextId };
        status = p.value.status;
        for (const a of p.value.artifacts) artifacts.push(a);
        break;
      case 'statusUpdate':
        check(task && p.value.taskId === task.id, `${where}: statusUpdate for task ${p.value.taskId}, want ${task?.id}`);
        check(p.value.contextId === task.contextId, `${where}: statusUpdate contextId`, p.value.contextId);
        status = p.value.status;
        break;
      case 'artifactUpdate':
        check(task && p.value.taskId === task.id, `${where}: artifactUpdate for task ${p.value.taskId}, want ${task?.id}`);
        check(p.value.artifact, `${where}: artifactUpdate with no artifact`);
        artifacts.push(p.value.artifact);
        break;
      case 'message':
        throw new Mismatch(`${where}: got a bare message in a task stream`);
      default:
        throw new Mismatch(`${where}: unknown stream event ${p.$case}`);
    }
  }
  check(events.length > 0, `${where}: stream had no events`);
  if (process.env.EXPENSE_E2E_VERBOSE) console.error(`${where}: events ${events.join(',')} -> ${stateName(status)}`);
  return { task, status, artifacts, events };
}

async function runStreaming(client, kind) {
  const where = `${kind} streaming`;
  const first = await collect(
    client.sendMessageStream(request(userMessage([textPart(REQUEST_TEXT)])), opts()),
    `${where} send`,
  );
  const questionId = checkQuestion(first.status, `${where} send (events ${first.events.join(',')})`);

  const answer = userMessage([dataPart({ questionId, costCentre: ANSWER })], first.task);
  const done = await collect(client.sendMessageStream(request(answer), opts()), `${where} answer`, first.task);
  check(done.status?.state === TaskState.TASK_STATE_COMPLETED,
    `${where} answer: stream ended in ${stateName(done.status)}, want TASK_STATE_COMPLETED (events ${done.events.join(',')})`);
  const expenseId = checkExpenseArtifact(done.artifacts, `${where} answer (events ${done.events.join(',')})`);
  return { task: first.task, expenseId };
}

// checkRequest checks the planning workflow's input-required status: the
// expense agent's question, relayed as the workflow's own request, with an
// "about" naming the participant that asks and its task. Returns the
// request's questionId.
function checkRequest(status, where) {
  const questionId = checkQuestion(status, where);
  const msg = status.message;
  const text = msg.parts.find((p) => p.content?.$case === 'text').content.value;
  check(text.startsWith('expense asks: '), `${where}: request text, want it to say the expense agent asks`, text);
  const q = msg.parts.find((p) => p.content?.$case === 'data').content.value;
  check(q.about && typeof q.about === 'object', `${where}: request has no "about"`, q);
  check(q.about.participant === 'expense', `${where}: about.participant, want "expense"`, q.about);
  check(typeof q.about.participantTask === 'string' && q.about.participantTask.length > 0, `${where}: about.participantTask`, q.about);
  return questionId;
}

// checkTranscript reads the planning workflow's "transcript" artifact: the
// planner, the expense agent (which filed the expense with the caller's cost
// centre) and the planner again. Returns the filed expense's ID.
function checkTranscript(artifacts, where) {
  const art = artifacts.find((a) => a.name === 'transcript');
  check(art, `${where}: no artifact named "transcript"`, artifacts.map((a) => a.name));
  const data = art.parts.find((p) => p.content?.$case === 'data');
  check(data, `${where}: transcript artifact has no data part`, art.parts);
  const { transcript, rounds } = data.content.value;
  check(Array.isArray(transcript), `${where}: transcript is not an array`, data.content.value);
  const speakers = transcript.map((t) => t.speaker);
  check(JSON.stringify(speakers) === JSON.stringify(['caller', 'planner', 'expense', 'planner']),
    `${where}: speakers, want caller, planner, expense, planner`, speakers);
  check(rounds === 3, `${where}: rounds, want 3`, rounds);
  check(transcript[0].text === REQUEST_TEXT, `${where}: the caller's turn`, transcript[0].text);
  const filed = /^Filed expense (EXP-[0-9A-F]+): 42\.00 .* charged to (CC-\d+)\.$/.exec(transcript[2].text);
  check(filed, `${where}: the expense agent's turn does not say it filed the expense`, transcript[2].text);
  check(filed[2] === ANSWER, `${where}: the expense was charged to ${filed[2]}, want ${ANSWER}`);
  check(transcript[3].text.startsWith('Checked: Filed expense ' + filed[1]), `${where}: the planner's check`, transcript[3].text);
  return filed[1];
}

async function runPlanningBlocking(client, kind) {
  const where = `planning ${kind} blocking`;
  const first = checkTask(await client.sendMessage(request(userMessage([textPart(REQUEST_TEXT)])), opts()), `${where} send`);
  const questionId = checkRequest(first.status, `${where} send`);

  const answer = userMessage([dataPart({ questionId, costCentre: ANSWER })], first);
  const done = checkTask(await client.sendMessage(request(answer), opts()), `${where} answer`);
  check(done.id === first.id, `${where} answer: task id changed from ${first.id}`, done.id);
  check(done.status?.state === TaskState.TASK_STATE_COMPLETED, `${where} answer: state is ${stateName(done.status)}, want TASK_STATE_COMPLETED`, done.status);
  return { task: done, expenseId: checkTranscript(done.artifacts, `${where} answer`) };
}

async function runPlanningStreaming(client, kind) {
  const where = `planning ${kind} streaming`;
  const first = await collect(client.sendMessageStream(request(userMessage([textPart(REQUEST_TEXT)])), opts()), `${where} send`);
  const questionId = checkRequest(first.status, `${where} send (events ${first.events.join(',')})`);

  const answer = userMessage([dataPart({ questionId, costCentre: ANSWER })], first.task);
  const done = await collect(client.sendMessageStream(request(answer), opts()), `${where} answer`, first.task);
  check(done.status?.state === TaskState.TASK_STATE_COMPLETED,
    `${where} answer: stream ended in ${stateName(done.status)}, want TASK_STATE_COMPLETED (events ${done.events.join(',')})`);
  return { task: first.task, expenseId: checkTranscript(done.artifacts, `${where} answer (events ${done.events.join(',')})`) };
}

async function main() {
  const base = (process.argv[2] ?? '').replace(/\/+$/, '');
  if (!/^https?:\/\//.test(base)) {
    console.error('usage: node expense.mjs BASE_URL   (e.g. http://127.0.0.1:8420)');
    process.exit(2);
  }
  for (const kind of ['jsonrpc', 'rest']) {
    for (const mode of ['blocking', 'streaming']) {
      const client = await newClient(base, kind);
      const { task, expenseId } = mode === 'blocking' ? await runBlocking(client, kind) : await runStreaming(client, kind);
      // The stored task, read back through the same SDK client, must agree.
      const got = checkTask(await client.getTask({ tenant: '', id: task.id }, opts()), `${kind} ${mode} getTask`);
      check(got.status?.state === TaskState.TASK_STATE_COMPLETED, `${kind} ${mode} getTask: state is ${stateName(got.status)}`);
      const stored = checkExpenseArtifact(got.artifacts, `${kind} ${mode} getTask`);
      check(stored === expenseId, `${kind} ${mode} getTask: expenseId ${stored}, want ${expenseId}`);
      console.log(`ok ${kind} ${mode} task=${task.id} expense=${expenseId}`);
    }
  }
  // The planning workflow as an agent: the SDK is its caller.
  for (const kind of ['jsonrpc', 'rest']) {
    for (const mode of ['blocking', 'streaming']) {
      const client = await newClient(base, kind, 'planning');
      const { task, expenseId } = mode === 'blocking' ? await runPlanningBlocking(client, kind) : await runPlanningStreaming(client, kind);
      const got = checkTask(await client.getTask({ tenant: '', id: task.id }, opts()), `planning ${kind} ${mode} getTask`);
      check(got.status?.state === TaskState.TASK_STATE_COMPLETED, `planning ${kind} ${mode} getTask: state is ${stateName(got.status)}`);
      const stored = checkTranscript(got.artifacts, `planning ${kind} ${mode} getTask`);
      check(stored === expenseId, `planning ${kind} ${mode} getTask: expense ${stored}, want ${expenseId}`);
      console.log(`ok planning ${kind} ${mode} task=${task.id} expense=${expenseId}`);
    }
  }
}

main().catch((err) => {
  const kind = err instanceof Mismatch ? 'mismatch' : `error (${err?.constructor?.name ?? typeof err})`;
  console.error(`FAIL ${kind}: ${err?.message ?? err}`);
  if (!(err instanceof Mismatch) && err?.stack) console.error(err.stack);
  if (err?.cause) console.error('cause:', err.cause);
  if (seen.length) console.error('last requests:\n  ' + seen.join('\n  '));
  process.exit(1);
});
