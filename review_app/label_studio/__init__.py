"""Label Studio as a second review surface: push the queue as tasks, pull annotations back
as review decisions. ``client`` is the small interface (real: ``sdk_client``, fake:
``fake_client``); ``config``, ``tasks`` and ``annotations`` are pure; ``sync`` joins them
to the state database."""
