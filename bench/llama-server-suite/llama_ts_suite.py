"""pytest plugin for running llama.cpp's server test suite against `llama-ts serve`.

Loaded with `-p llama_ts_suite` (run.ts puts this folder on PYTHONPATH); the suite's own
files are not modified. It
  - turns ServerPreset.load_all (conftest.py's download of every preset model) into a no-op:
    nothing is downloaded, the models are local files (./tmp, the download folder the
    suite's slot files also go to, is made as the downloads would have made it);
  - skips a test whose server asks for a model models.json does not map to a local file
    (or for a model URL / multimodal projector), instead of failing it at start-up;
  - skips a test that downloads a file (utils.download_file: a LoRA adapter, a draft
    model) not already in ./tmp, instead of failing its setup on the network.
  - skips a router-mode test (test_router.py) whose requests name such a model: its server
    starts without one, the names are in the test's code and parameters.
LLAMA_SUITE_MODELS_JSON names another map than models.json (e.g. stand-ins, to exercise a
test's logic on other models).
"""

import inspect
import json
import os
import re
import sys

import pytest

_HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.environ.get("LLAMA_SUITE_MODELS_JSON") or os.path.join(_HERE, "models.json"), encoding="utf-8") as f:
    _MODELS = json.load(f)["models"]


def _unavailable(server):
    """Why this server's model cannot be had offline, or None."""
    if server.model_file:
        return None
    if server.mmproj_url:
        return f"multimodal projector {server.mmproj_url} (not available offline)"
    if server.model_hf_repo:
        key = server.model_hf_repo + ("/" + server.model_hf_file if server.model_hf_file else "")
        if key not in _MODELS:
            return f"model {key} (not available offline; see bench/llama-server-suite/models.json)"
        return None
    if server.model_url:
        return f"model URL {server.model_url} (not available offline)"
    return None


def pytest_configure(config):
    sys.path.insert(0, str(config.rootpath))
    import utils  # the suite's utils.py, the module conftest.py uses

    utils.ServerPreset.load_all = staticmethod(lambda: None)
    # the downloads would have made ./tmp (LLAMA_CACHE=tmp); test_slot_save.py saves there
    os.makedirs(os.path.join(str(config.rootpath), "tmp"), exist_ok=True)
    start = utils.ServerProcess.start

    def start_or_skip(self, *args, **kwargs):
        why = _unavailable(self)
        if why is not None:
            pytest.skip(why)
        return start(self, *args, **kwargs)

    utils.ServerProcess.start = start_or_skip
    download = utils.download_file

    def download_or_skip(url, output_file_path=None):
        path = output_file_path or os.path.join("tmp", url.split("/").pop())
        if not os.path.exists(path):
            pytest.skip(f"file {url} (not available offline)")
        return download(url, output_file_path)

    utils.download_file = download_or_skip


# a Hugging Face model name as the suite's router tests write them (OWNER/REPO[:QUANT])
_HF_NAME = re.compile(r"ggml-org/[A-Za-z0-9._-]+(?::[A-Za-z0-9_]+)?")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if not item.nodeid.split("::")[0].endswith("test_router.py"):
            continue
        try:
            text = inspect.getsource(item.function)
        except (OSError, TypeError):
            continue
        # the body (its parametrize decorator lists every case's names) and this case's parameters
        body = text[text.find("def "):]
        callspec = getattr(item, "callspec", None)
        params = " ".join(str(v) for v in callspec.params.values()) if callspec else ""
        names = set(_HF_NAME.findall(body)) | set(_HF_NAME.findall(params))
        missing = sorted(n for n in names if n not in _MODELS)
        if missing:
            item.add_marker(pytest.mark.skip(
                reason=f"model {', '.join(missing)} (not available offline; see bench/llama-server-suite/models.json)"))
