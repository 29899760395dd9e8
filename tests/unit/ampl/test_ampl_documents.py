"""``embed_documents``' companions and the audit's ``unpaired`` check: every secret the audit samples has
another value of its (type, format) group at a distinct point, or the stage refuses; none is skipped."""
from __future__ import annotations

import hashlib

import numpy as np

from privtext.ampl.documents import DocTokens, Span, embed_documents
from privtext.clusant.surface_format import adjacency_group
from privtext.stages.audit import companion, unpaired


def _encoder(blind=frozenset()):
    """A fixed vector per token from its hash; every token in ``blind`` is one point (an unknown token)."""
    def encode(phrases):
        rows = []
        for p in phrases:
            seed = 0 if p in blind else int.from_bytes(hashlib.sha256(p.encode()).digest()[:4], "little")
            rows.append(np.random.default_rng(seed).normal(size=8))
        return np.asarray(rows)
    return encode


def _doc(value, entity_type, secret_id):
    return DocTokens(("call", value), ("call", "X"), (None, Span(0, 0, secret_id, "PII", entity_type)))


def _euclidean(batch):
    return lambda i, j: np.linalg.norm(batch.candidates[i] - batch.candidates[j], axis=1)


def test_a_secret_alone_in_its_group_gets_a_public_companion_of_its_format():
    docs = [_doc("555-0101", "PHONE_NUMBER", "a"), _doc("Ada Lovelace", "PERSON", "b"),
            _doc("Alan Turing", "PERSON", "c")]
    batch = embed_documents(docs, _encoder(), adjacency_group, companion)
    assert batch.companions == 1 and len(batch.candidates) == 4
    phone = adjacency_group("PHONE_NUMBER", "555-0101")
    assert batch.candidate_groups.count(phone) == 2  # the secret and its companion
    added = batch.candidate_values[-1]
    assert added != "555-0101" and adjacency_group("PHONE_NUMBER", added) == phone
    assert unpaired(batch.candidate_groups, _euclidean(batch)) == 0
    alone = embed_documents(docs, _encoder(), adjacency_group)  # without companions the check counts it
    assert unpaired(alone.candidate_groups, _euclidean(alone)) == 1


def test_secrets_one_point_to_the_encoder_get_a_companion():
    values = ["555-0101", "555-0102", "555-0103"]
    docs = [_doc(v, "PHONE_NUMBER", v) for v in values]
    batch = embed_documents(docs, _encoder(blind=frozenset(values)), adjacency_group, companion)
    assert batch.companions == 1 and unpaired(batch.candidate_groups, _euclidean(batch)) == 0
    plain = embed_documents(docs, _encoder(), adjacency_group, companion)  # distinct points: none needed
    assert plain.companions == 0 and unpaired(plain.candidate_groups, _euclidean(plain)) == 0


def test_a_group_no_companion_can_join_is_counted_unpaired():
    values = ["555-0101", "555-0102"]
    docs = [_doc(v, "PHONE_NUMBER", v) for v in values]
    batch = embed_documents(docs, _encoder(blind=frozenset(values)), adjacency_group,
                            lambda entity_type, value, i: "not a phone")  # falls outside the group: refused
    assert batch.companions == 0
    assert unpaired(batch.candidate_groups) == 0  # two members ...
    assert unpaired(batch.candidate_groups, _euclidean(batch)) == 2  # ... at one point: the stage refuses


def test_every_name_layout_and_script_has_a_companion_in_its_group():
    # a name's layout class reads the case: a lower-case companion fell outside every title-case group, so a
    # night with one lone first name (or one name of a script without case) was refused as unauditable
    values = [("PERSON", v) for v in ("Kim", "KIM", "kim", "Ada Lovelace", "Lovelace, Ada", "ada lovelace",
                                      "李明", "김민준", "Иван Петров", "José María", "O'Neil")]
    values += [("PHONE_NUMBER", "555-0101"), ("DATE_TIME", "Fri, 13 Sep 2002"), ("EMAIL_ADDRESS", "a.b@gmail.com"),
               ("EMAIL_ADDRESS", "ab@corp.example.org"), ("URL", "http://www.x.org/a"), ("LOCATION", "Bern")]
    for entity_type, value in values:
        group = adjacency_group(entity_type, value)
        found = [c for c in (companion(entity_type, value, i) for i in range(8))
                 if c != value and adjacency_group(entity_type, c) == group]
        assert found, (entity_type, group)
        docs = [_doc(value, entity_type, "a")]
        assert unpaired(embed_documents(docs, _encoder(), adjacency_group, companion).candidate_groups) == 0
