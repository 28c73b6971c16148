"""Adapters: a request builder and a wire translator joined to the transport. Each one
turns :class:`~dshstream._core.request.GenerateOptions` into a stream of chunks."""
