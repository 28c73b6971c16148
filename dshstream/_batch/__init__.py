"""The batch executor: many requests on threads, rate-limit aware, resumable (``dshstream.batch``)."""
