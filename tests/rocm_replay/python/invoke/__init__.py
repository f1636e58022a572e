"""Test stand-in for the ``invoke`` package (pyinvoke), just enough of it for a hipBLASLt
checkout's ``tensilelite/tasks.py``: the ``task`` decorator and a ``Context`` (``python -m
invoke`` is ``__main__.py`` beside this file). It is found through PYTHONPATH
(tests/rocm_replay/python), as the real package would be found in the Python environment."""


class Context:
    """What a task gets as its first argument (the stand-in tasks run no commands through it,
    so it offers none)."""


def task(fn):
    """Marks a function of tasks.py as a task (``@task``)."""
    fn.invoke_task = True
    return fn
