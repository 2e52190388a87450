"""Predictive matching (P-ToPSS, Muthusamy, Liu and Jacobsen, DEBS 2010): will a subscription
match within the next n events?

Pipeline (compile once, run with explicit state)::

    text --subscription--> Subscription --machine--> SequenceMachine per sequence
    events --events--> instances + signatures --run--> states, matches, TransitionCounts
    TransitionCounts --markov--> Chain --first passage--> alpha(n), beta(n)
    answer.predict: all of it per instance, with Boolean nodes combined; model: blobs
    composite subscriptions (Boolean steps in a sequence): nested (match), convolve (predict)

Example:
    >>> ev = Events.from_columns(ts=list(range(6)), keys=["k"] * 6, types=list("ABAXAB"))
    >>> r = predict("PATTERN A, B", ev, lookahead=2)
    >>> r.rows["key"], r.rows["state"], r.rows["matches"]
    (['k'], ['A B'], [2])
"""

from __future__ import annotations

from cep.predict.answer import Prediction, and_nodes, check_arguments, predict
from cep.predict.errors import (ModelFormatError, PredictArgumentError, PredictEventsError,
                                PredictLimitError, UnsupportedSubscriptionError)
from cep.predict.events import Events, instances, signatures
from cep.predict.machine import SequenceMachine, TransitionTable
from cep.predict.markov import Chain, build_chain
from cep.predict.model import InstanceState, LeafModel, Model
from cep.predict.run import LeafResult, TransitionCounts, run_leaf
from cep.predict.subscription import (Boolean, CrossTime, Primitive, Sequence, Subscription,
                                      TimeCondition, compile_subscription)

__all__ = [
    "Boolean",
    "Chain",
    "CrossTime",
    "Events",
    "InstanceState",
    "LeafModel",
    "LeafResult",
    "Model",
    "ModelFormatError",
    "Prediction",
    "PredictArgumentError",
    "PredictEventsError",
    "PredictLimitError",
    "Primitive",
    "Sequence",
    "SequenceMachine",
    "Subscription",
    "TimeCondition",
    "TransitionCounts",
    "TransitionTable",
    "UnsupportedSubscriptionError",
    "and_nodes",
    "build_chain",
    "check_arguments",
    "compile_subscription",
    "instances",
    "predict",
    "run_leaf",
    "signatures",
]

# One vocabulary for every engine (docs/architecture.md, "One vocabulary"): ``compile`` turns
# pattern text into the engine's frozen program, ``run`` evaluates a program over its input.
# Not in __all__: a star import would shadow the builtin ``compile``.
compile = compile_subscription
run = predict
