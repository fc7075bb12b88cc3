"""Model clients: the one chat-completions client and the offline llama.cpp server."""
