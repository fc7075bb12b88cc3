"""Framework integrations that write a ctwm trace while an agent runs; each module needs its own extra
and is never imported by the core:

* :mod:`ctwm_cli.integrations.langchain` — ``CtwmCallbackHandler`` (``pip install 'ctwm[langchain]'``);
* :mod:`ctwm_cli.integrations.llamaindex` — ``CtwmEventHandler`` for retrievers and ``TracedVectorStore`` around
  any ``BasePydanticVectorStore`` (the long-term memory of ``Memory``'s vector blocks) (``'ctwm[llamaindex]'``);
* :mod:`ctwm_cli.integrations.crewai` — ``CrewAITrace`` on CrewAI's event bus, with ``TracedStorage`` around its
  memory backend: reads, writes, the task of each and its outcome (``'ctwm[crewai]'``);
* :mod:`ctwm_cli.integrations.otel` — ``TraceFileExporter`` and ``otlp_json`` (``'ctwm[otel]'``);
* :mod:`ctwm_cli.integrations.mem0` — ``TracedMemory`` around a Mem0 ``Memory`` (``'ctwm[mem0]'``);
* :mod:`ctwm_cli.integrations.langgraph` — ``TracedStore`` around any LangGraph ``BaseStore``
  (``'ctwm[langgraph]'``);
* :mod:`ctwm_cli.integrations.minilm` — ``MiniLMEmbeddings``, an offline LangChain embedder for both.
"""
