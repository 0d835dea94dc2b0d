"""Model servers as Ray actors: vLLM or llama.cpp (or a stand-in), one replica per bundle.

::

    with ModelServers("Qwen/Qwen2.5-0.5B-Instruct", replicas=2) as servers:
        urls = servers.start()                    # ["http://10.0.0.5:8000/v1", ...]
        data = wai.simulate(agent=servers.endpoint(), tools=TOOLS, budget=1000, concurrency=256)

:class:`ModelServers` reserves a placement group of ``replicas`` bundles
``{"GPU": gpus_per_replica, "CPU": cpus_per_replica}`` (strategy ``SPREAD`` by default: replicas
on different nodes where there are several; ``PACK`` keeps them together), starts one
:class:`ServerActor` in each bundle, and each actor launches the server subprocess bound to its
node's IP (the actor holds the bundle's GPUs, so the server sees exactly those through
``CUDA_VISIBLE_DEVICES``). ``start()`` waits until every replica answers ``GET /v1/models``
and returns their base URLs; a replica that exits or stays silent past ``health_timeout_s``
fails the start with a RuntimeError naming it and showing its last log lines, and the others
are stopped. A server that dies later is restarted on the same host and port by its actor (up
to ``max_restarts`` times, see ``servers/actor.py``); the rollouts it was playing fail and are
re-rolled, and ``status()`` shows each replica's pid, health and restarts. ``stop()`` kills the
servers (whole process groups) and frees the placement group; the context manager calls it.

Kinds (``command=``): ``"vllm"`` (GPU), ``"llama_cpp"`` (a GGUF file served by
``python -m llama_cpp.server``: runs on CPU, ``gpus_per_replica=0``, or offloads every layer to
the bundle's GPUs), ``"scripted"`` (the project's stand-in) or an argv list.

Placement is checked before waiting: when no node of the running cluster has the resources
of one bundle (or the cluster as a whole cannot hold them all), the start fails at once with
the missing resources named, unless ``autoscaling=True`` (a cluster that adds nodes on demand),
which waits up to ``placement_timeout_s``.

:meth:`endpoint` returns an ``agents.routing.MultiEndpoint`` over the URLs: pass it as
``agent=`` and every turn of a rollout goes to the same replica (prefix-cache reuse).
"""
from __future__ import annotations

import os
from typing import Any

import ray
from ray.exceptions import GetTimeoutError
from ray.util.placement_group import placement_group, remove_placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from ...agents.routing import MultiEndpoint
from .actor import ServerActor
from .process import server_command

__all__ = ["ModelServers", "ServerActor"]

_STRATEGIES = ("SPREAD", "PACK", "STRICT_SPREAD", "STRICT_PACK")


class ModelServers:
    """``replicas`` OpenAI-compatible servers of ``model`` on Ray; see the module docstring.

    ``command``: ``"vllm"``, ``"llama_cpp"`` (``model`` is a GGUF path on the replica's node; the
    served name is ``--model_alias`` from ``extra_args``, else the path), ``"scripted"`` (CPU
    stand-in, use ``gpus_per_replica=0``) or an argv list with ``{model}``/``{host}``/``{port}``/
    ``{gpus}``. ``max_restarts``: how often a replica whose server died is started again. ``port_base``: replica i listens on
    ``port_base + i`` (default: a free port). ``node_ip``: bind address override (default: the
    IP of the node Ray put the replica on). ``extra_args`` go to every server's command line.
    """

    def __init__(self, model: str, replicas: int = 1, gpus_per_replica: float = 1, cpus_per_replica: float = 2,
                 port_base: int | None = None, command="vllm", extra_args=(), health_timeout_s: float = 600,
                 node_ip: str | None = None, strategy: str = "SPREAD", placement_timeout_s: float = 300,
                 autoscaling: bool = False, max_restarts: int = 3):
        if not isinstance(model, str) or not model.strip():
            raise ValueError(f"ModelServers(model=...) must be a model name or a local path; got {model!r}")
        if not isinstance(replicas, int) or replicas < 1:
            raise ValueError(f"replicas must be an integer >= 1; got {replicas!r}")
        if gpus_per_replica < 0 or cpus_per_replica < 0:
            raise ValueError("gpus_per_replica and cpus_per_replica must be >= 0")
        if command == "vllm" and gpus_per_replica <= 0:
            raise ValueError("command='vllm' needs gpus_per_replica >= 1 (use command='llama_cpp' with a GGUF "
                             "file to serve on CPU, or command='scripted' for a CPU stand-in)")
        if isinstance(max_restarts, bool) or not isinstance(max_restarts, int) or max_restarts < 0:
            raise ValueError(f"max_restarts must be an integer >= 0 (restarts per replica); got {max_restarts!r}")
        if strategy not in _STRATEGIES:
            raise ValueError(f"strategy must be one of {list(_STRATEGIES)}; got {strategy!r}")
        if port_base is not None and not (0 < int(port_base) and int(port_base) + replicas < 65536):
            raise ValueError(f"port_base must leave room for {replicas} ports below 65536; got {port_base!r}")
        if not (gpus_per_replica or cpus_per_replica):
            raise ValueError("a replica needs some resources: cpus_per_replica > 0 or gpus_per_replica > 0")
        server_command(command, model, "127.0.0.1", 1, gpus_per_replica, extra_args)   # checks command
        self.model = model
        self.replicas = replicas
        self.bundle = {k: v for k, v in (("GPU", gpus_per_replica), ("CPU", cpus_per_replica)) if v}
        self.gpus = gpus_per_replica
        self.port_base = port_base
        self.command = command
        self.extra_args = tuple(str(a) for a in extra_args)
        self.health_timeout_s = float(health_timeout_s)
        self.node_ip = node_ip
        self.strategy = strategy
        self.placement_timeout_s = float(placement_timeout_s)
        self.autoscaling = autoscaling
        self.max_restarts = max_restarts
        self.urls: list[str] = []
        self.pids: list[int] = []
        self._pg: Any = None                # the placement group, once reserved
        self._actors: list = []

    # -- placement ---------------------------------------------------------------------------
    def _infeasible(self) -> str | None:
        """Why the running cluster cannot hold the bundles, or None when it can."""
        nodes = [n.get("Resources", {}) for n in ray.nodes() if n.get("Alive")]
        fits = [n for n in nodes if all(n.get(k, 0) >= v for k, v in self.bundle.items())]
        if not fits:
            have = {k: max((n.get(k, 0) for n in nodes), default=0) for k in self.bundle}
            return (f"no node has the resources of one replica {self.bundle} "
                    f"(largest node: {', '.join(f'{k}={v:g}' for k, v in have.items())})")
        missing = [f"{k}: need {v * self.replicas:g}, cluster has {sum(n.get(k, 0) for n in nodes):g}"
                   for k, v in self.bundle.items() if sum(n.get(k, 0) for n in nodes) < v * self.replicas]
        if missing:
            return f"the cluster cannot hold {self.replicas} replicas of {self.bundle} ({'; '.join(missing)})"
        return None

    def _reserve(self) -> None:
        why = self._infeasible()
        if why and not self.autoscaling:
            raise RuntimeError(f"cannot place model servers: {why}. Add nodes with those resources, lower "
                               f"gpus_per_replica/cpus_per_replica/replicas, or pass autoscaling=True on a "
                               f"cluster that adds nodes on demand")
        pg = self._pg = placement_group([dict(self.bundle) for _ in range(self.replicas)], strategy=self.strategy,
                                        name=f"whileai-model-servers-{os.getpid()}-{id(self):x}")
        try:
            ray.get(pg.ready(), timeout=self.placement_timeout_s)
        except GetTimeoutError:
            self._release()
            raise RuntimeError(f"cannot place model servers: {self.replicas} bundles of {self.bundle} "
                               f"(strategy {self.strategy}) not granted within placement_timeout_s="
                               f"{self.placement_timeout_s:g}; {why or 'resources are held by other work'}") from None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> list[str]:
        """Start every replica and wait for health; the base URLs (``http://ip:port/v1``)."""
        if self.urls:
            return list(self.urls)
        self._reserve()
        assert self._pg is not None
        remote = ray.remote(ServerActor)
        self._actors = [remote.options(
            num_cpus=self.bundle.get("CPU", 0), num_gpus=self.bundle.get("GPU", 0), max_restarts=0,
            scheduling_strategy=PlacementGroupSchedulingStrategy(self._pg, placement_group_bundle_index=i),
        ).remote(i, self.replicas, self.max_restarts) for i in range(self.replicas)]
        refs = [a.start.remote(self.command, self.model, self.port_base + i if self.port_base else None,
                               self.node_ip, self.gpus, self.extra_args, self.health_timeout_s)
                for i, a in enumerate(self._actors)]
        try:
            results = ray.get(refs, timeout=self.health_timeout_s + 120)
        except Exception as exc:
            self.stop()
            raise RuntimeError(f"model servers did not start: {type(exc).__name__}: {exc}") from None
        errors = [r["error"] for r in results if "error" in r]
        self.pids = [r["pid"] for r in results if "pid" in r]
        if errors:
            self.stop()
            raise RuntimeError("\n\n".join(errors))
        self.urls = [r["url"] for r in results]
        return list(self.urls)

    def healthy(self) -> list[bool]:
        """Whether each replica's process is alive and answers ``GET /v1/models`` now."""
        return ray.get([a.healthy.remote() for a in self._actors], timeout=30)

    def status(self) -> list[dict]:
        """Per replica: ``{"url", "pid", "alive", "healthy", "restarts", "errors", "log_tail"}``."""
        states = ray.get([a.status.remote() for a in self._actors], timeout=30)
        self.pids = [st["pid"] for st in states]
        return [{"url": url, **st} for url, st in zip(self.urls, states)]

    def endpoint(self, served_model_name: str | None = None, affinity: str = "rollout"):
        """An ``agents.routing.MultiEndpoint`` over the started replicas (pass it as ``agent=``)."""
        if not self.urls:
            raise RuntimeError("ModelServers.endpoint() needs the servers started: call start() first")
        name = served_model_name
        for flag in ("--served-model-name", "--model_alias"):       # vLLM's, llama_cpp.server's
            if name is None and flag in self.extra_args[:-1]:
                name = self.extra_args[self.extra_args.index(flag) + 1]
        return MultiEndpoint(name or self.model, self.urls, affinity=affinity)

    def stop(self) -> None:
        """Kill every server (process group) and free the placement group. Safe to call twice."""
        if self._actors:
            try:
                ray.get([a.stop.remote() for a in self._actors], timeout=60)
            except Exception:   # an actor already dead: its servers got SIGTERM with it
                pass
            for actor in self._actors:
                ray.kill(actor, no_restart=True)
        self._actors = []
        self.urls = []
        self._release()

    def _release(self) -> None:
        if self._pg is not None:
            try:
                remove_placement_group(self._pg)
            except Exception:
                pass
            self._pg = None

    def __enter__(self) -> "ModelServers":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        return (f"ModelServers(model={self.model!r}, replicas={self.replicas}, bundle={self.bundle}, "
                f"command={self.command!r}, urls={self.urls})")
