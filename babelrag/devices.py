"""Which device(s) and precision a torch encoder runs on, and how an out-of-memory error is recognised.

``device`` is ``auto`` (every CUDA device torch sees, else MPS, else CPU), ``cpu``, ``cuda``, ``cuda:N``,
``mps`` or a list of those (one worker per entry). What torch sees is read through ``TorchView`` so the
resolution is testable on a machine without a GPU (inject the view). ``precision`` ``auto`` is fp16 on
an accelerator and fp32 on CPU (half precision on CPU is slower than fp32 and loses accuracy).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Optional, Union

from babelrag.errors import ConfigError

Precision = Literal["auto", "fp16", "bf16", "fp32"]
DeviceSetting = Union[str, list[str]]


@dataclass(frozen=True)
class TorchView:
    """What torch reports about accelerators (``TorchView.current()``), or an injected view in tests."""
    cuda_devices: int = 0
    mps: bool = False
    torch_version: str = ""

    @staticmethod
    def current() -> "TorchView":
        import torch

        mps = bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())
        return TorchView(torch.cuda.device_count() if torch.cuda.is_available() else 0, mps, torch.__version__)


def _one(name: str, view: TorchView, setting: str) -> list[str]:
    name = name.strip().lower()
    if name == "auto":
        if view.cuda_devices:
            return [f"cuda:{i}" for i in range(view.cuda_devices)]
        return ["mps"] if view.mps else ["cpu"]
    if name == "cpu":
        return ["cpu"]
    if name == "mps":
        if not view.mps:
            raise ConfigError(f"{setting}: mps, but torch {view.torch_version} sees no Apple GPU; use auto or cpu")
        return ["mps"]
    if name == "cuda" or name.startswith("cuda:"):
        index = name.partition(":")[2] or "0"
        if not index.isdigit():
            raise ConfigError(f"{setting}: {name!r} is not a device; write cuda or cuda:N")
        if view.cuda_devices == 0:
            raise ConfigError(f"{setting}: {name}, but torch {view.torch_version} sees no CUDA device (a CPU build, "
                              "no driver, or CUDA_VISIBLE_DEVICES empty); use auto or cpu")
        if int(index) >= view.cuda_devices:
            raise ConfigError(f"{setting}: {name}, but torch sees {view.cuda_devices} CUDA device(s) "
                              f"(cuda:0..cuda:{view.cuda_devices - 1})")
        return [f"cuda:{int(index)}"]
    raise ConfigError(f"{setting}: unknown device {name!r}; use auto, cpu, cuda, cuda:N, mps or a list of them")


def resolve_devices(device: DeviceSetting, view: Optional[TorchView] = None,
                    setting: str = "dense.encoder.device") -> list[str]:
    """The concrete devices for a setting, one per worker (``auto`` may give several CUDA devices)."""
    names = [device] if isinstance(device, str) else list(device)
    if not names:
        raise ConfigError(f"{setting}: an empty list; give auto, cpu, cuda, cuda:N or mps")
    view = view if view is not None else TorchView.current()
    out: list[str] = []
    for name in names:
        out.extend(_one(name, view, setting))
    return out


def resolve_precision(precision: Precision, device: str) -> Literal["fp16", "bf16", "fp32"]:
    """``auto``: fp16 on CUDA and MPS, fp32 on CPU; an explicit value is kept."""
    if precision != "auto":
        return precision
    return "fp32" if device == "cpu" else "fp16"


def torch_dtype(precision: str) -> Any:
    import torch

    return {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[precision]


def is_out_of_memory(exc: BaseException) -> bool:
    """torch's OOM error (CUDA, and what recent torch raises elsewhere), Python's ``MemoryError``, or a
    ``RuntimeError`` that says so (the MPS and CPU allocators, older torch)."""
    import sys

    torch = sys.modules.get("torch")  # no OOM error can come from torch when torch was never imported
    kinds = (MemoryError, getattr(torch, "OutOfMemoryError", MemoryError))
    return isinstance(exc, kinds) or (isinstance(exc, RuntimeError) and "out of memory" in str(exc).lower())


def free_cached_memory(device: str) -> None:
    """Give the allocator's cached blocks back after an OOM, so the smaller batch can use them."""
    import sys

    torch = sys.modules.get("torch")
    if torch is None:
        return
    if device.startswith("cuda") and torch.cuda.is_available():
        torch.cuda.empty_cache()
    elif device == "mps" and hasattr(torch, "mps"):
        torch.mps.empty_cache()

