"""Framework integrations that write a ctwm trace while an agent runs; each module needs its own extra
and is never imported by the core:

* :mod:`ctwm_cli.integrations.langchain` — ``CtwmCallbackHandler`` (``pip install 'ctwm[langchain]'``);
* :mod:`ctwm_cli.integrations.llamaindex` — ``CtwmEventHandler`` (``'ctwm[llamaindex]'``);
* :mod:`ctwm_cli.integrations.otel` — ``TraceFileExporter`` and ``otlp_json`` (``'ctwm[otel]'``).
"""
