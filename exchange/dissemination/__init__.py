"""The exchange side of range watches' dissemination (docs/dissemination.md): consumer
processes on the channel layer (``processes``) and the optimizer's choices kept in Redis
for the staff dashboard (``choices``). The strategies themselves are Django-free, in
``matching.dissemination``."""
