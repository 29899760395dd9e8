"""``privtext eval pii``: precision / recall / F1 of the configured detector on annotated text."""
from __future__ import annotations

from privtext.pii.evaluate import evaluate, format_scores, read_conll
from privtext.settings import PROJECT_ROOT

DEFAULT_DATA = PROJECT_ROOT.parent / "shared" / "data" / "ner" / "wnut16_tweets.conll"


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
    docs = read_conll(args.data)
    print(f"documents: {len(docs)}")
    for line in format_scores(evaluate(docs, settings)):
        print(line)
    return 0


def register(sub) -> None:
    evaluate_parser = sub.add_parser("eval", help="evaluate a component on annotated data")
    eval_sub = evaluate_parser.add_subparsers(dest="eval_command", required=True)
    pii = eval_sub.add_parser("pii", help="PII detection quality per entity type (WNUT-16 CoNLL by default)")
    pii.add_argument("--suite", choices=("wnut", "presidio", "sample"), default="wnut",
                     help="wnut: WNUT-16 tweets (--data); presidio: presidio-evaluator's generator; sample: the "
                          "sample corpus's planted values (recall, character coverage, precision per type)")
    pii.add_argument("--data", default=str(DEFAULT_DATA), help="token<TAB>BIO-tag file (--suite wnut)")
    pii.add_argument("--n", type=int, default=1500, help="generated texts (presidio, sample)")
    pii.add_argument("--seed", type=int, default=42)
    pii.set_defaults(func=cmd_eval_pii)
