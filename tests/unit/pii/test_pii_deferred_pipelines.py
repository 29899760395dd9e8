"""pii.detect defers transformers' pipelines: Presidio's import binds ``transformers.pipeline`` (for its unused
Hugging Face NER pipe), which imported every pipeline in each process building an analyzer. Deferred, the
pipelines load only when ``transformers.pipeline`` is called, and the call is the real one's."""
import json
import subprocess
import sys

PROBE = """
import json, sys
from privtext.pii.detect import _defer_transformers_pipelines
_defer_transformers_pipelines()
import presidio_analyzer  # noqa: F401
from presidio_analyzer.nlp_engine import huggingface_token_pipe
loaded_by_presidio = "transformers.pipelines" in sys.modules
import transformers

def outcome(build):
    try:
        build(task="no-such-task")
    except Exception as error:  # the task is unknown: both raise
        return [type(error).__name__, str(error)[:200]]
    return None

bound = huggingface_token_pipe.hf_pipeline is transformers.pipeline
called = outcome(transformers.pipeline)
from transformers.pipelines import pipeline as real
print(json.dumps({"loaded_by_presidio": loaded_by_presidio, "bound": bound, "called": called, "real": outcome(real)}))
"""


def test_presidio_imports_no_pipeline_and_a_call_is_the_real_pipeline():
    """In a fresh process: Presidio binds the name (without the deferral that binding is what imports every
    pipeline), nothing imports the pipelines until the call, and the call behaves as the real function."""
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    probe = json.loads(done.stdout.strip().splitlines()[-1])
    assert probe["bound"] is True and probe["loaded_by_presidio"] is False
    assert probe["called"] is not None and probe["called"] == probe["real"]
