"""Provider batch APIs (OpenAI, Anthropic, Gemini): the same requests sent as one
half-price batch, each row's answer read by the same wire translator as a stream."""
