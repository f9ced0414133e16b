"""Model agents for the harness's agent registry (entry points in the ``cua.agents`` group):
``hf:PATH`` (``hf``), ``openai:URL[#MODEL]`` (``openai_agent``), ``vllm:PATH``
(``vllm_agent``, the gpu extra); their options in ``options``."""
