"""Which callables stay in the caller's process: those a pickled copy would not be (no Ray)."""
import functools
import os
import threading

from ray import cloudpickle as pickle   # what caller/run.py passes: local functions and lambdas pickle by value

from whileai_ray.agents.seeded import seeded_agent
from whileai_ray.runtime.caller.stay_home import why_home
from whileai_ray.testing.seeded_rows import TOOLS

CALLS: list = []
LIMIT = 3


def pure_agent(message):                  # code and constants only: a copy is the same thing
    return {"steps": [], "final_text": message.upper()[:LIMIT] + os.sep}


def logging_agent(message):               # writes to a list of the caller's
    CALLS.append(message)
    return message


SEEDED = seeded_agent(TOOLS)


def uses_seeded(message):
    return SEEDED(message)


class Agent:
    def __init__(self, url):
        self.url = url

    def __call__(self, message):
        return message


def test_code_and_constants_travel():
    assert why_home(pure_agent, pickle.dumps) is None
    assert why_home(SEEDED, pickle.dumps) is None                             # ours: keyed, no caller state
    assert why_home(uses_seeded, pickle.dumps) is None
    assert why_home(Agent, pickle.dumps) is None                              # a class is built where it runs
    assert why_home(functools.partial(Agent, "http://x"), pickle.dumps) is None
    assert why_home(None, pickle.dumps) is None


def test_what_does_not_pickle_stays_home_and_says_why():
    lock = threading.Lock()

    def agent(message):
        with lock:
            return message
    reason = why_home(agent, pickle.dumps)
    assert reason.startswith("it does not pickle")


def test_callables_holding_the_callers_data_stay_home():
    calls = []

    def execute(tool, arguments):
        calls.append(tool)
        return {"status": "ok"}
    assert why_home(execute, pickle.dumps) == "it closes over 'calls' (list)"
    assert why_home(logging_agent, pickle.dumps) == "it uses the global 'CALLS' (list)"
    assert "Agent object" in why_home(Agent("http://x"), pickle.dumps)
    assert "partial arguments" in why_home(functools.partial(Agent, ["a"]), pickle.dumps)
    assert "default argument" in why_home(lambda m, seen={}: m, pickle.dumps)
