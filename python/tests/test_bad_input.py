"""Bad input raises ValueError with the CLI's message (OSError for an unreadable file), never
crashes the interpreter; each refusal is paired with the good input next to it working.
The oracle for the messages is `ranklab eval`'s wording (harness/src/trec/error.rs,
harness/src/metrics/select.rs)."""

import os

import pytest

import treclab

QRELS = {"q1": {"a": 1, "b": 0}, "q2": {"c": 2}}
RUN = {"q1": {"a": 1.5, "x": 0.5}, "q2": {"c": 3}}


def test_good_input_evaluates():
    assert treclab.evaluate(QRELS, RUN, ["P.1"]) == {"P_1": 1.0}


def test_unknown_measure_names_the_nearest():
    with pytest.raises(ValueError, match=r"unknown measure `ndcg@ten`"):
        treclab.evaluate(QRELS, RUN, ["ndcg@ten"])
    with pytest.raises(ValueError, match=r"did you mean"):
        treclab.evaluate(QRELS, RUN, ["ndgc_cut.10"])
    with pytest.raises(ValueError, match=r"unknown measure"):
        treclab.RelevanceEvaluator(QRELS, {"mapp"})


def test_malformed_files_name_file_and_line(tmp_path):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 a 1\nq1 0 b 1 extra\n")
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 a 1 1.0 t\n")
    with pytest.raises(ValueError, match=r"qrels.txt:2: expected 4 fields"):
        treclab.evaluate(qrels, run, "map")
    qrels.write_text("q1 0 a 1\n")
    assert treclab.evaluate(qrels, run, "map") == {"map": 1.0}
    run.write_text("q1 Q0 a 1 1.0 t\nq1 Q0 b 2 nan t\n")
    with pytest.raises(ValueError, match=r"run.txt:2:\d+: score `nan` is not a finite number"):
        treclab.evaluate(qrels, run, "map")
    run.write_text("q1 Q0 a 1 1.0 t\nq1 Q0 a 2 0.5 t\n")
    with pytest.raises(ValueError, match=r"run.txt:2: document `a` appears twice"):
        treclab.evaluate(qrels, run, "map")


def test_unreadable_file_is_an_os_error(tmp_path):
    with pytest.raises(OSError, match=r"cannot read .*nothing.txt"):
        treclab.evaluate(tmp_path / "nothing.txt", RUN, "map")


@pytest.mark.parametrize(
    "qrels, run, pattern",
    [
        ({1: {"a": 1}}, RUN, r"qrels: query id 1 is a int, not a str"),
        ({"q1": {2: 1}}, RUN, r"qrels: document id 2 in query `q1` is a int, not a str"),
        ({"q1": {"a": 1.5}}, RUN, r"judgment of document `a` in query `q1` is 1.5"),
        ({"q1": {"a": True}}, RUN, r"judgment of document `a` in query `q1` is True"),
        (QRELS, {"q1": {"a": float("nan")}, "q2": {"c": 1.0}}, r"score of document `a` in query `q1` is nan, not a finite number"),
        (QRELS, {"q1": {"a": float("inf")}, "q2": {"c": 1.0}}, r"is inf, not a finite number"),
        (QRELS, {"q1": {"a": "high"}, "q2": {"c": 1.0}}, r"score of document `a` in query `q1` is 'high'"),
        (QRELS, {"q 1": {"a": 1.0}}, r"run: query id 'q 1' is empty or contains whitespace"),
        (QRELS, {"q1": ["a"]}, r"run: the value of query `q1` must be a dict"),
        (QRELS, 42, r"run: expected a path"),
    ],
)
def test_bad_dicts_are_value_errors(qrels, run, pattern):
    with pytest.raises(ValueError, match=pattern):
        treclab.evaluate(qrels, run, "map")


def test_missing_query_needs_complete():
    run = {"q1": RUN["q1"]}
    with pytest.raises(ValueError, match=r"query `q2` of the qrels has no results .*pass complete=True"):
        treclab.evaluate(QRELS, run, "map")
    assert treclab.evaluate(QRELS, run, "map", complete=True) == {"map": 0.5}
    # pytrec_eval's API leaves such a query out instead.
    assert list(treclab.RelevanceEvaluator(QRELS, {"map"}).evaluate(run)) == ["q1"]


def test_negative_relevance_level_is_refused():
    with pytest.raises(ValueError, match=r"relevance_level=-1"):
        treclab.evaluate(QRELS, RUN, "map", relevance_level=-1)


def test_empty_dicts():
    with pytest.raises(ValueError, match=r"run: the run dict holds no document"):
        treclab.evaluate(QRELS, {}, "map")
    with pytest.raises(ValueError, match=r"qrels: the qrels dict holds no document"):
        treclab.evaluate({"q1": {}}, RUN, "map")
    # pytrec_eval's API: an empty run evaluates to nothing, as pytrec_eval's does.
    assert treclab.RelevanceEvaluator(QRELS, {"map"}).evaluate({}) == {}
    assert treclab.RelevanceEvaluator(QRELS, {"map"}).evaluate({"q1": {}}) == {}


def test_a_device_or_fifo_is_refused_not_read(tmp_path):
    # /dev/zero has no newline and no end: read whole, it aborted the interpreter on an
    # allocation of 4 GiB. A FIFO with no writer would block for ever.
    with pytest.raises(OSError, match=r"/dev/zero.*a character device, not a regular file"):
        treclab.evaluate("/dev/zero", RUN, "map")
    with pytest.raises(OSError, match=r"a character device, not a regular file"):
        treclab.evaluate(QRELS, "/dev/zero", "map")
    fifo = tmp_path / "run.fifo"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match=r"a FIFO \(named pipe\), not a regular file"):
        treclab.evaluate(QRELS, fifo, "map")


def test_arguments_of_the_wrong_kind_name_the_argument():
    with pytest.raises(TypeError, match=r"run: expected a path.*got a row 1 of type int"):
        treclab.evaluate(QRELS, [1, 2, 3], "map")
    with pytest.raises(ValueError, match=r"relevance_level=1000000000000000000000000000000: out of range"):
        treclab.evaluate(QRELS, RUN, "map", relevance_level=10**30)
    with pytest.raises(TypeError, match=r"relevance_level must be an int"):
        treclab.evaluate(QRELS, RUN, "map", relevance_level="2")
    with pytest.raises(ValueError, match=r"run: document id '\\ud800' in query `q1` holds an unpaired surrogate"):
        treclab.evaluate(QRELS, {"q1": {"\ud800": 1.0}}, "map")
    with pytest.raises(ValueError, match=r"qrels: query id '\\udc80' holds an unpaired surrogate"):
        treclab.evaluate({"\udc80": {"a": 1}}, RUN, "map")
