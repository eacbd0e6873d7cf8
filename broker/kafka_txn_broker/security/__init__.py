"""Security: who a connection is and what it may do.

- auth: the cluster's security settings (listener protocol, TLS, SASL, authorizer) and each connection's session
- tls: the server SSLContext from PEM material, and mTLS principals
- sasl, scram: the SASL mechanisms (PLAIN, SCRAM-SHA-256/512) over the configured users
- gssapi: SASL/GSSAPI (Kerberos) with the broker's keytab; oauthbearer: SASL/OAUTHBEARER, JWTs checked against a JWKS
- acls: ACL bindings, filters and their config text form
- acl_store: ACLs created over the wire, persisted in the data dir
- authorizer: Kafka's AclAuthorizer rules over an in-memory index
"""
