"""dshstream: stream LLM responses from every provider as one typed chunk protocol."""
