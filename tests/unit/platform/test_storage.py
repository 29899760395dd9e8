"""Object-store settings: delta-rs options per zone, and no place for credentials in config."""
import pytest

from privtext.platform.storage import delta_options, filesystem
from privtext.settings import ConfigError, load_settings

STORE = {"endpoint": "http://127.0.0.1:8333", "region": "eu-west-1", "allow_http": True}


def test_each_zone_gets_its_own_store_options_and_local_zones_none():
    settings = load_settings(None, environ={}, overrides={"lakehouse": {
        "zone_roots": {"published": "s3://pub/lake", "protected": "s3://prot/lake"},
        "object_store": STORE, "zone_object_stores": {"published": {**STORE, "endpoint": "http://10.0.0.9:9000",
                                                                     "commit": "unsafe_rename"}}}})
    lake = settings.lakehouse
    protected = delta_options(lake.zone_root("protected"), lake.zone_store("protected"))
    published = delta_options(lake.zone_root("published"), lake.zone_store("published"))
    assert protected == {"aws_conditional_put": "etag", "AWS_ENDPOINT_URL": "http://127.0.0.1:8333",
                         "AWS_REGION": "eu-west-1", "AWS_ALLOW_HTTP": "true"}
    assert published["AWS_ENDPOINT_URL"] == "http://10.0.0.9:9000" and published["AWS_S3_ALLOW_UNSAFE_RENAME"] == "true"
    assert "aws_conditional_put" not in published
    assert delta_options(lake.zone_root("restricted"), lake.zone_store("restricted")) == {}  # a local folder
    fs, path = filesystem("s3://pub/lake/t", lake.zone_store("published"))
    assert (fs.type_name, path) == ("s3", "pub/lake/t")


@pytest.mark.parametrize("key", ["aws_access_key_id", "aws_secret_access_key", "secret_key"])
def test_credentials_in_config_are_refused_naming_the_key(key):
    with pytest.raises(ConfigError) as error:
        load_settings(None, environ={}, overrides={"lakehouse": {"object_store": {**STORE, key: "AKIA-not-here"}}})
    assert f"lakehouse.object_store.{key}" in str(error.value)
    assert "AKIA-not-here" not in str(error.value)  # the refused value is not echoed
