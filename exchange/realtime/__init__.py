"""The WebSocket side of the exchange (SPEC 6.3, 6.5, 8.2, 8.3), served by Channels at /ws/.

``consumers`` is the one endpoint; ``auth`` and ``origin`` decide who may connect;
``streams`` names the streams clients follow and their channel-layer groups, ``patterns``
the streams named by a subject pattern, ``subscriptions`` the ``sub:<id>`` streams of live
subscriptions and ``replay`` their batched replays from the log; ``limits`` and ``presence``
bound and record what each client holds, in Redis. Services send to the groups after
commit; nothing here writes an order.
"""
