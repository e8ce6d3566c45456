package worker

// InboxPrefix is the prefix of reactor's reply subjects (JetStream API
// replies, pulled messages, publish acknowledgements) instead of NATS'
// shared _INBOX. With subject permissions (deploy/nats/nats-server.conf)
// reactor alone may subscribe to it, so no other client can read the
// events delivered to reactor; every other client keeps _INBOX.
const InboxPrefix = "_INBOX_reactor"
