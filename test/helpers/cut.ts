// Where to cut a forced get_weather call (WEATHER_TOOL: city, then days) with max_tokens,
// found in a reference reply that was not cut: the tokens' texts (logprobs entries), the
// last token count before the call's name is closed, the first at which the reply has
// just written the name, is inside its
// arguments (just after the days' digits), and has just closed its arguments (the call
// itself still open).
import { scanJson } from '../../src/chat/index.js';
import { API_KEY, WEATHER_TOOL } from './clients.js';

export interface CutPoints {
  /** The call's marker or name is still being written (the name not yet closed). */
  beforeName: number;
  /** The name is complete; the arguments have not begun. */
  afterName: number;
  /** The arguments are open: `…"days":3` (a proper prefix of the whole arguments). */
  inArgs: number;
  /** The arguments object is closed; the call around it is not. */
  argsClosed: number;
}

/** Cut points from the text of each token of a reply (in order). */
export function cutPoints(tokens: readonly string[]): CutPoints {
  const texts: string[] = [];
  let acc = '';
  for (const t of tokens) {
    acc += t;
    texts.push(acc);
  }
  const first = (what: string, ok: (text: string) => boolean) => {
    const i = texts.findIndex(ok);
    if (i < 0) throw new Error(`the reference reply never reaches ${what}: ${JSON.stringify(acc)}`);
    return i + 1;
  };
  const argsStart = (text: string) => {
    const m = /"(?:arguments|parameters)"\s*:\s*\{/.exec(text);
    return m ? m.index + m[0].length - 1 : -1;
  };
  const beforeName = first('the name', (t) => t.includes('"get_weather"')) - 1;
  const afterName = first('the end of the name', (t) => /"get_weather"\s*,/.test(t));
  const inArgs = first("the days' digits", (t) => argsStart(t) >= 0 && /"days"\s*:\s*\d+$/.test(t));
  const argsClosed = first('the end of the arguments', (t) => argsStart(t) >= 0 && scanJson(t, argsStart(t)) > 0);
  if (
    !(
      0 < beforeName &&
      beforeName < afterName &&
      afterName < inArgs &&
      inArgs < argsClosed &&
      argsClosed < tokens.length
    )
  ) {
    throw new Error(`cut points out of order (${afterName}, ${inArgs}, ${argsClosed} of ${tokens.length})`);
  }
  if (argsStart(texts[afterName - 1]!) >= 0) throw new Error('the arguments begin with the name');
  return { beforeName, afterName, inArgs, argsClosed };
}

/** The question and options of a forced get_weather call (greedy, every prompt evaluated afresh). */
export const FORCED_CALL = {
  messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
  tools: [WEATHER_TOOL],
  tool_choice: 'required',
  temperature: 0,
  cache_prompt: false,
};

/** A forced call asked of a server (`extra`: more request fields) and not cut: its arguments, reasoning, and where to cut it. */
export async function referenceCall(
  url: string,
  extra: Record<string, unknown> = {},
): Promise<{ args: string; reasoning: string | undefined; points: CutPoints; promptTokens: number }> {
  const r = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${API_KEY}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ ...FORCED_CALL, ...extra, max_tokens: 300, logprobs: true }),
  });
  // biome-ignore lint/suspicious/noExplicitAny: the response is read by shape
  const body = (await r.json()) as any;
  const c = body.choices[0];
  if (c.finish_reason !== 'tool_calls') throw new Error(`the reference call did not end: ${JSON.stringify(c)}`);
  return {
    args: c.message.tool_calls[0].function.arguments,
    reasoning: c.message.reasoning_content,
    points: cutPoints(c.logprobs.content.map((e: { token: string }) => e.token)),
    promptTokens: body.usage.prompt_tokens,
  };
}
