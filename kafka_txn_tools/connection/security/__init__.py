"""The client's security: TLS (tls.py), SASL/GSSAPI (kerberos.py), SASL/OAUTHBEARER (oauth.py), and the
secrets they handle kept out of logs (redact.py). SASL PLAIN and SCRAM need nothing beyond config.py."""
