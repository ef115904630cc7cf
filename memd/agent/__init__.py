"""What agent hosts' hooks get from memd: a session's starting memory, recall for a
prompt, and a flush from a hook (``memd.agent.context``, ``memd.agent.hookflush``)."""

CONTEXT_BUDGET = 1500  # tokens a session's starting memory may take, by default
RECALL_BUDGET = 600  # tokens of notes for one prompt, by default
