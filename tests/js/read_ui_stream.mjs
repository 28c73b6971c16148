// Reads UI message streams with the Vercel AI SDK's own reader, as a chat client does:
// parseJsonEventStream + uiMessageChunkSchema (what DefaultChatTransport runs on a
// response body), then readUIMessageStream (what useChat builds its message with).
//
//   node read_ui_stream.mjs PACKAGE URL...
//
// PACKAGE is "ai" (6.x: extra keys in a part are accepted) or "ai-v5" (5.0.100, from
// before vercel/ai PR #17010: a part with any key its schema lacks is rejected). Each URL
// is POSTed (an empty JSON body) and its answer read to the end; one JSON line per URL:
// {url, status, headers, types, invalid, errors, message} — the types of the parts that
// parsed, the parse failures, what onError heard, and the last UIMessage.

const [pkg, ...urls] = process.argv.slice(2);
const ai = await import(pkg);
const { parseJsonEventStream, readUIMessageStream, uiMessageChunkSchema } = ai;

for (const url of urls) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
  });
  const types = [];
  const invalid = [];
  const errors = [];
  const chunks = parseJsonEventStream({
    stream: response.body,
    schema: uiMessageChunkSchema,
  }).pipeThrough(
    new TransformStream({
      transform(result, controller) {
        if (result.success) {
          types.push(result.value.type);
          controller.enqueue(result.value);
        } else {
          invalid.push(String(result.error?.message ?? result.error).slice(0, 2000));
        }
      },
    }),
  );
  let message = null;
  for await (const state of readUIMessageStream({
    stream: chunks,
    onError: error => errors.push(String(error?.message ?? error)),
  })) {
    message = state;
  }
  process.stdout.write(
    JSON.stringify({
      url,
      status: response.status,
      headers: Object.fromEntries(response.headers.entries()),
      types,
      invalid,
      errors,
      message,
    }) + '\n',
  );
}
