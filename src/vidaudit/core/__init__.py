"""Types, stable hashes and seeds shared by every stage."""
