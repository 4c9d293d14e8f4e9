"""The daemon: the gRPC servicer over a transport-free service layer, auth, limits, lifecycle."""
