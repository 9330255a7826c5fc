"""The LLM layer: every chain (questions, relevance checks, judges) calls models through here.

Import the pieces from their modules (``babelrag.llm.client``, ``.config``, ``.prompts``, ``.usage``,
``.local``); this package file stays empty of heavy imports so ``babelrag --help`` is fast.
"""
