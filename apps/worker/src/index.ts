// @adp/worker: the streaming consumer (see README.md beside this folder).
