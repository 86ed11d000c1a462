"""One runner per runtime behind one small interface (see ``base.Runner``)."""
