"""The test store's identities file, the analyst reader's and the cluster daemons' environments (no store started:
the store itself is exercised in tests/integration/test_store_roles.py)."""
import json
from pathlib import Path

from privtext.platform.config import ZONES
from privtext.platform.local_cluster import analyst_env, daemon_env
from privtext.platform.local_s3 import S3Store, identities_config, s3_conf
from privtext.platform.store_access import IDENTITY_ZONES

BUCKETS = {zone: f"b-{zone}" for zone in ZONES}
CREDENTIALS = {identity: {"AWS_ACCESS_KEY_ID": f"ID-{identity}", "AWS_SECRET_ACCESS_KEY": f"secret-{identity}",
                          "AWS_REGION": "us-east-1"} for identity in IDENTITY_ZONES}


def test_identities_have_bucket_scoped_actions_only_and_their_own_key():
    config = identities_config(BUCKETS, CREDENTIALS)
    actions = {i["name"]: sorted(i["actions"]) for i in config["identities"]}
    assert actions == {
        "pipeline": sorted(f"{a}:b-{z}" for z in ZONES for a in ("Read", "List", "Write")),
        "officer": sorted(f"{a}:b-{z}" for z in ("protected", "published") for a in ("Read", "List")),
        "analyst": ["List:b-published", "Read:b-published"],
    }
    assert not [a for acts in actions.values() for a in acts if ":" not in a]  # no store-wide action (Admin ...)
    keys = [c["accessKey"] for i in config["identities"] for c in i["credentials"]]
    assert sorted(keys) == sorted(c["AWS_ACCESS_KEY_ID"] for c in CREDENTIALS.values())


def test_the_analyst_reader_gets_the_analyst_key_and_no_other_secret(monkeypatch, tmp_path):
    store = S3Store("http://127.0.0.1:9", BUCKETS, CREDENTIALS, Path(tmp_path), 0)
    for name, value in {**CREDENTIALS["pipeline"], "PRIVTEXT_HMAC_KEY": "h" * 32, "AWS_SESSION_TOKEN": "t"}.items():
        monkeypatch.setenv(name, value)
    env = analyst_env(store, s3_conf(store, {"run": {"hmac_key_env": "PRIVTEXT_HMAC_KEY"}}))
    assert {k: env[k] for k in CREDENTIALS["analyst"]} == CREDENTIALS["analyst"]
    assert "PRIVTEXT_HMAC_KEY" not in env and "AWS_SESSION_TOKEN" not in env
    assert not [v for v in env.values() if v in ("h" * 32, "secret-pipeline", "secret-officer", "ID-pipeline")]
    assert env["PRIVTEXT_PUBLISHED"] == "s3://b-published/lake"
    assert json.loads(env["PRIVTEXT_STORAGE_OPTIONS"])["AWS_ENDPOINT_URL"] == "http://127.0.0.1:9"


def test_cluster_daemons_hold_only_the_key_they_are_given():
    """A session token or key already in the caller's shell does not reach the master or the workers
    (whose executors inherit their environment): only the role's key passed in ``env``, or none."""
    shell = {**CREDENTIALS["officer"], "AWS_SESSION_TOKEN": "t", "PATH": "/bin"}
    env = daemon_env(shell, CREDENTIALS["pipeline"])
    assert {k: env[k] for k in CREDENTIALS["pipeline"]} == CREDENTIALS["pipeline"]
    assert "AWS_SESSION_TOKEN" not in env and env["PATH"] == "/bin"
    bare = daemon_env(shell, None)
    assert not {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"} & set(bare)
    assert bare["AWS_REGION"] == "us-east-1" and bare["SPARK_LOCAL_IP"] == "127.0.0.1"
