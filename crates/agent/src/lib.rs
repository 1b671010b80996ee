//! The agent side of hands: the session tools (plan mode first), and later the model providers
//! and the loop.
