//! The gateway process and a one-request-at-a-time Kafka connection over tokio.

use super::*;

/// The gateway process: killed on drop, so also when a panic unwinds; the data dir goes with it.
pub(crate) struct Gateway {
    pub(crate) child: Child,
    pub(crate) dir: tempfile::TempDir,
    pub(crate) addr: String,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The gateway on its embedded store, or on the iggy-server at `iggy`, with its KIP-848
/// members' session and heartbeat interval (ms).
pub(crate) fn start_gateway(
    bin: &PathBuf,
    iggy: Option<&str>,
    (session, heartbeat): (u64, u64),
) -> Gateway {
    // Let the OS pick a free port, then hand it to the gateway (a tiny race, fine on loopback).
    let listener = net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    drop(listener);
    let dir = tempfile::tempdir().unwrap();
    let log = fs::File::create(dir.path().join("gateway.log")).unwrap();
    let mut cmd = Command::new(bin);
    if let Some(iggy) = iggy {
        cmd.env("IGGY_KAFKA_BACKEND", "iggy")
            .env("IGGY_KAFKA_IGGY_ADDRESS", iggy)
            .env("IGGY_KAFKA_IGGY_CONNECT_TIMEOUT_MS", "10000");
    }
    let child = cmd
        .env("IGGY_KAFKA_BIND_ADDRESS", &addr)
        .env("IGGY_KAFKA_ADMIN_BIND_ADDRESS", "127.0.0.1:0")
        .env("IGGY_KAFKA_DATA_DIR", dir.path().join("data"))
        .env("IGGY_KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS", "0")
        // KIP-848 members' session and heartbeat, each with its floor (Kafka's are 45 s
        // and 5 s: part 3's are below them).
        .envs(
            [
                "IGGY_KAFKA_GROUP_CONSUMER_MIN_SESSION_TIMEOUT_MS",
                "IGGY_KAFKA_GROUP_CONSUMER_SESSION_TIMEOUT_MS",
            ]
            .map(|k| (k, session.to_string())),
        )
        .envs(
            [
                "IGGY_KAFKA_GROUP_CONSUMER_MIN_HEARTBEAT_INTERVAL_MS",
                "IGGY_KAFKA_GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS",
            ]
            .map(|k| (k, heartbeat.to_string())),
        )
        .env(
            "RUST_LOG",
            env::var("GATEWAY_LOG").unwrap_or_else(|_| "warn".into()),
        )
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("spawn gateway");
    let mut gw = Gateway { child, dir, addr };
    let deadline = Instant::now() + Duration::from_secs(15);
    while net::TcpStream::connect(&gw.addr).is_err() {
        if let Ok(Some(status)) = gw.child.try_wait() {
            let log = fs::read_to_string(gw.dir.path().join("gateway.log")).unwrap_or_default();
            panic!("gateway exited ({status}) before listening:\n{log}");
        }
        assert!(
            Instant::now() < deadline,
            "gateway: not listening after 15 s"
        );
        thread::sleep(Duration::from_millis(50));
    }
    gw
}

pub(crate) fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// One Kafka connection: a request at a time, each answer checked against its correlation id.
pub(crate) struct Conn {
    pub(crate) stream: TcpStream,
    pub(crate) correlation: i32,
    pub(crate) client_id: StrBytes,
}

impl Conn {
    pub(crate) async fn connect(addr: &str, client_id: &str) -> Result<Conn, String> {
        let stream = tokio::time::timeout(CALL_TIMEOUT, TcpStream::connect(addr))
            .await
            .map_err(|_| "connect timed out".to_string())?
            .map_err(|e| format!("connect: {e}"))?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        Ok(Conn {
            stream,
            correlation: 0,
            client_id: s(client_id),
        })
    }

    pub(crate) async fn call(
        &mut self,
        key: ApiKey,
        version: i16,
        body: RequestKind,
    ) -> Result<ResponseKind, String> {
        self.correlation += 1;
        let header = RequestHeader::default()
            .with_request_api_key(key as i16)
            .with_request_api_version(version)
            .with_correlation_id(self.correlation)
            .with_client_id(Some(self.client_id.clone()));
        let mut buf = BytesMut::new();
        buf.put_i32(0); // the length, filled in below
        header
            .encode(&mut buf, key.request_header_version(version))
            .map_err(|e| format!("{key:?} header: {e}"))?;
        body.encode(&mut buf, version)
            .map_err(|e| format!("{key:?} v{version}: {e}"))?;
        let len = (buf.len() - 4) as i32;
        buf[..4].copy_from_slice(&len.to_be_bytes());
        let stream = &mut self.stream;
        let frame = tokio::time::timeout(CALL_TIMEOUT, async move {
            stream.write_all(&buf).await?;
            let len = stream.read_i32().await?;
            let mut frame = vec![0; len.max(0) as usize];
            stream.read_exact(&mut frame).await?;
            Ok::<_, std::io::Error>(frame)
        })
        .await
        .map_err(|_| format!("{key:?}: no answer after {CALL_TIMEOUT:?}"))?
        .map_err(|e| format!("{key:?}: {e}"))?;
        let mut frame = Bytes::from(frame);
        let header = ResponseHeader::decode(&mut frame, key.response_header_version(version))
            .map_err(|e| format!("{key:?} response header: {e}"))?;
        if header.correlation_id != self.correlation {
            return Err(format!(
                "{key:?}: correlation {} answered, {} asked",
                header.correlation_id, self.correlation
            ));
        }
        ResponseKind::decode(key, &mut frame, version).map_err(|e| format!("{key:?} response: {e}"))
    }
}

/// Calls and unwraps the response of the expected kind.
macro_rules! call {
    ($conn:expr, $kind:ident, $version:expr, $req:expr) => {
        match $conn
            .call(ApiKey::$kind, $version, RequestKind::$kind($req))
            .await?
        {
            ResponseKind::$kind(r) => r,
            other => {
                return Err(format!(
                    "{}: unexpected answer {other:?}",
                    stringify!($kind)
                ))
            }
        }
    };
}

pub(crate) async fn create_topic(addr: &str, name: &str, partitions: i32) -> Result<(), String> {
    let mut conn = Conn::connect(addr, "bench-admin").await?;
    let req = CreateTopicsRequest::default()
        .with_topics(vec![CreatableTopic::default()
            .with_name(TopicName(s(name)))
            .with_num_partitions(partitions)
            .with_replication_factor(1)])
        .with_timeout_ms(10_000);
    let resp = call!(conn, CreateTopics, CREATE_TOPICS_V, req);
    match resp.topics.first().map(|t| t.error_code) {
        Some(0) => Ok(()),
        other => Err(format!("CreateTopics {name}: error {other:?}")),
    }
}
