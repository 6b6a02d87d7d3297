//! The server binary's configuration (`askbus-server`): flags, validation, refusals.

use std::time::Duration;

use askbus::question::{FollowUp, Identity, OnTimeout, Role};
use askbus_http::TokenScope;
use askbus_server::{Cli, ConfigError, Demo, StoreUrl};
use clap::Parser;

fn settings(args: &[&str]) -> Result<askbus_server::Settings, ConfigError> {
    let cli = Cli::try_parse_from(std::iter::once("askbus").chain(args.iter().copied()))
        .expect("flags parse");
    cli.settings()
}

#[test]
fn defaults_listen_on_loopback_without_auth() {
    let settings = settings(&[]).expect("valid");
    assert_eq!(settings.listen.to_string(), "127.0.0.1:4717");
    assert!(settings.http.tokens.is_empty());
    assert_eq!(settings.demo, Demo::Off);
}

#[test]
fn the_default_store_is_an_embedded_sqlite_file() {
    let store = |args: &[&str]| settings(args).expect("valid").store;
    assert_eq!(store(&[]), StoreUrl::Sqlite("askbus.db".into()));
    assert_eq!(
        store(&["--store", "sqlite:/var/lib/askbus/questions.db"]),
        StoreUrl::Sqlite("/var/lib/askbus/questions.db".into())
    );
    assert_eq!(store(&["--store", "memory"]), StoreUrl::Memory);
}

#[test]
fn askbus_mcp_keeps_requests_in_memory_unless_told_otherwise() {
    // Spawned by MCP clients, often several in one directory: not one SQLite file each.
    let store = |args: &[&str]| settings(args).expect("valid").store;
    assert_eq!(store(&["mcp"]), StoreUrl::Memory);
    assert_eq!(
        store(&["mcp", "--store", "sqlite:agent.db"]),
        StoreUrl::Sqlite("agent.db".into())
    );
    assert_eq!(
        store(&["--store", "sqlite:agent.db", "mcp"]),
        StoreUrl::Sqlite("agent.db".into())
    );
}

#[test]
fn a_redis_store_is_shared_under_a_prefix_and_logged_without_its_password() {
    let redis = |url: &str| match settings(&["--store", url]).expect("valid").store {
        StoreUrl::Redis(location) => location,
        other => panic!("{url}: {other:?}"),
    };
    let check = |url: &str, prefix: &str, shown: &str| {
        let location = redis(url);
        assert_eq!(location.prefix(), prefix, "{url}");
        assert_eq!(location.to_string(), shown, "{url}");
        assert!(!format!("{location:?}").contains("secret"), "{url}");
    };
    check(
        "redis://127.0.0.1:6379",
        "askbus",
        "redis://127.0.0.1:6379 (keys under askbus:)",
    );
    check(
        "redis://10.0.0.5:6379/2?prefix=team-a",
        "team-a",
        "redis://10.0.0.5:6379/2 (keys under team-a:)",
    );
    check(
        "redis://user:secret@cache.internal:6380/0?prefix=prod",
        "prod",
        "redis://***@cache.internal:6380/0 (keys under prod:)",
    );
    check(
        "redis://:secret@127.0.0.1:6379/1?protocol=resp3&prefix=p",
        "p",
        "redis://***@127.0.0.1:6379/1?protocol=resp3 (keys under p:)",
    );
    let shown = StoreUrl::Redis(redis("redis://127.0.0.1:6379")).to_string();
    assert!(shown.contains("shared with every server"), "{shown}");
}

#[test]
fn a_non_loopback_address_needs_a_token() {
    for address in ["0.0.0.0:4717", "192.168.1.10:80", "[::]:4717"] {
        let refused = settings(&["--listen", address]).expect_err("refused");
        assert!(matches!(refused, ConfigError::TokenRequired(_)));
        let message = refused.to_string();
        assert!(message.contains("--token"), "{message}");
        assert!(message.contains("not a loopback address"), "{message}");
    }
    for address in ["127.0.0.1:1", "[::1]:4717", "127.0.0.2:9"] {
        assert!(settings(&["--listen", address]).is_ok(), "{address}");
    }
    let settings =
        settings(&["--listen", "192.168.1.10:4717", "--token", "a-long-secret"]).expect("valid");
    assert_eq!(settings.http.tokens.len(), 1);
}

#[test]
fn every_address_needs_the_names_it_is_reached_under() {
    let token = ["--token", "a-long-secret"];
    for address in ["0.0.0.0:4717", "[::]:4717"] {
        let refused = settings(&["--listen", address, token[0], token[1]]).expect_err("refused");
        assert!(
            matches!(refused, ConfigError::AllowedHostRequired(_)),
            "{refused}"
        );
        assert!(refused.to_string().contains("--allowed-host"), "{refused}");
        let named = settings(&[
            "--listen",
            address,
            token[0],
            token[1],
            "--allowed-host",
            "askbus.internal, Askbus.Example.com:8443",
        ])
        .expect("valid");
        let names: Vec<String> = named
            .http
            .allowed_hosts
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(names, ["askbus.internal", "askbus.example.com:8443"]);
    }
    // Any host at all: only the token keeps a rebinding page out.
    let any = ["--allowed-host", "*"];
    assert!(matches!(
        settings(&any).expect_err("refused"),
        ConfigError::AnyHostWithoutToken
    ));
    assert!(settings(&[any[0], any[1], token[0], token[1]]).is_ok());
    for bad in [
        "https://askbus.example.com",
        "user@askbus",
        "askbus:notaport",
    ] {
        let refused = settings(&["--allowed-host", bad]).expect_err(bad);
        assert!(
            matches!(refused, ConfigError::BadAllowedHost(_)),
            "{bad}: {refused}"
        );
    }
}

#[test]
fn tokens_are_repeatable_comma_separated_and_scopable() {
    let settings =
        settings(&["--token", "one,two@session-a", "--token", "three", "--demo"]).expect("valid");
    let scopes: Vec<_> = settings
        .http
        .tokens
        .iter()
        .map(|token| token.scope().clone())
        .collect();
    assert_eq!(
        scopes,
        [
            TokenScope::AllSessions,
            TokenScope::Session("session-a".into()),
            TokenScope::AllSessions
        ]
    );
    assert_eq!(settings.demo, Demo::On);
    // Secrets never show in debug output.
    assert!(!format!("{:?}", settings.http.tokens).contains("two"));
}

#[test]
fn the_quorum_floor_is_parsed_and_needs_enough_reviewers() {
    let reviewers = ["--reviewer-token", "alice=alicesecret,bob=bobsecret"];
    let floor = |extra: &[&str]| {
        let args: Vec<&str> = reviewers.iter().chain(extra).copied().collect();
        settings(&args).map(|settings| settings.quorum_floor)
    };
    let set = floor(&["--quorum", "drop_table=2,*=1"]).expect("valid");
    assert_eq!((set.of("drop_table"), set.of("read_file")), (2, 1));
    let error = floor(&["--quorum", "*=3"]).unwrap_err().to_string();
    assert!(error.contains("needs 3 distinct reviewers"), "{error}");
    let error = floor(&["--quorum", "drop_table"]).unwrap_err().to_string();
    assert!(error.contains("bad --quorum"), "{error}");
    // Without credentials everyone is one identity: no quorum above 1.
    assert!(settings(&["--quorum", "drop_table=2"]).is_err());
    assert_eq!(settings(&[]).unwrap().quorum_floor.highest(), 1);
}

#[test]
fn default_timeouts_take_seconds_units_or_never() {
    let timeouts = |args: &[&str]| {
        settings(args).map(|settings| {
            (
                settings.questions.default_timeout,
                settings.approvals.default_timeout,
            )
        })
    };
    let minutes = |n: u64| Some(Duration::from_secs(60 * n));
    assert_eq!(timeouts(&[]).unwrap(), (minutes(10), minutes(5)));
    assert_eq!(
        timeouts(&["--question-timeout", "never", "--approval-timeout", "90"]).unwrap(),
        (None, Some(Duration::from_secs(90)))
    );
    assert_eq!(
        timeouts(&["--question-timeout", "2h", "--approval-timeout", "1.5m"]).unwrap(),
        (minutes(120), Some(Duration::from_secs(90)))
    );
    for bad in ["0", "-1", "10y", "soon", "400d", ""] {
        let flag = format!("--approval-timeout={bad}");
        let error = timeouts(&[&flag]).unwrap_err().to_string();
        assert!(error.contains("--approval-timeout"), "{bad}: {error}");
    }
}

#[test]
fn follow_up_flags_set_the_default_follow_up() {
    let follow_up = settings(&[
        "--reviewer-token",
        "alice=alicesecret",
        "--remind-after",
        "1m",
        "--escalate-after",
        "2m",
        "--escalate-to",
        "alice",
        "--on-timeout",
        "escalate",
    ])
    .expect("valid")
    .follow_up;
    assert_eq!(
        follow_up,
        FollowUp::default()
            .remind_after(Duration::from_secs(60))
            .escalate_after(Duration::from_secs(120), ["alice"])
            .on_timeout(OnTimeout::Escalate)
    );
    assert_eq!(settings(&[]).unwrap().follow_up, FollowUp::default());
    // Without credentials the one who may decide is `local`.
    let local = settings(&["--escalate-after", "90s", "--escalate-to", "local"]).expect("valid");
    assert_eq!(local.follow_up.escalate_to, ["local"]);
}

#[test]
fn follow_up_flags_that_cannot_apply_are_refused_with_a_clear_message() {
    let refused = |args: &[&str], expected: &str| {
        let message = settings(args).expect_err("refused").to_string();
        assert!(
            message.contains(expected),
            "{args:?}: {message:?} lacks {expected:?}"
        );
    };
    fn with_alice<'a>(extra: &[&'a str]) -> Vec<&'a str> {
        ["--reviewer-token", "alice=alicesecret"]
            .iter()
            .chain(extra)
            .copied()
            .collect()
    }
    refused(
        &with_alice(&["--escalate-after", "2m", "--escalate-to", "bob"]),
        "--escalate-to \"bob\" is no reviewer or admin credential of this server",
    );
    // An agent's credential asks, never decides: nobody to escalate to.
    refused(
        &[
            "--agent-token",
            "bob=bobsecret",
            "--escalate-after",
            "2m",
            "--escalate-to",
            "bob",
        ],
        "--escalate-to \"bob\" is no reviewer or admin credential",
    );
    refused(
        &with_alice(&["--escalate-to", "alice"]),
        "--escalate-to needs --escalate-after or --on-timeout escalate",
    );
    refused(
        &with_alice(&["--on-timeout", "escalate"]),
        "needs --escalate-to NAME",
    );
    refused(
        &with_alice(&["--on-timeout", "approve"]),
        "--on-timeout \"approve\": give `reject` or `escalate`",
    );
    refused(&["--remind-after", "never"], "--remind-after \"never\"");
    for bad in ["0", "-1", "soon", "5y", "400d", ""] {
        for flag in ["--remind-after", "--escalate-after"] {
            let arg = format!("{flag}={bad}");
            let mut args = with_alice(&["--escalate-to", "alice"]);
            args.push(&arg);
            let message = settings(&args).expect_err("refused").to_string();
            assert!(message.contains(flag), "{arg}: {message}");
            assert!(
                !message.contains("`never`"),
                "{arg}: never is no follow-up's: {message}"
            );
        }
    }
}

#[test]
fn listen_takes_a_host_name_and_resolves_it_once() {
    let listen = settings(&["--listen", "localhost:4717"]).expect("localhost resolves");
    assert_eq!(listen.listen, "127.0.0.1:4717".parse().unwrap());
    for bad in ["localhost", "no-such-host.invalid:4717", "localhost:port"] {
        let error = settings(&["--listen", bad]).unwrap_err().to_string();
        assert!(error.contains("--listen"), "{bad}: {error}");
    }
}

#[test]
fn metrics_are_on_unless_turned_off() {
    assert!(settings(&[]).expect("valid").http.metrics);
    assert!(!settings(&["--no-metrics"]).expect("valid").http.metrics);
}

#[test]
fn a_link_secret_must_be_long_enough_to_sign_with() {
    let error = settings(&["--link-secret", "short"])
        .unwrap_err()
        .to_string();
    assert!(error.contains("--link-secret"), "{error}");
    assert!(settings(&["--link-secret", &"x".repeat(32)]).is_ok());
}

/// `Cli` derives `Debug`, so it may be logged: no flag's secret shows in it, while the
/// settings made from it still use them (the tokens authenticate, the link secret signs).
#[test]
fn the_flags_print_no_secret() {
    let secrets = [
        "admin-secret-0000000000",
        "agent-secret-1111111111",
        "reviewer-secret-2222222222",
        "link-secret-33333333333333333333333333",
        "whsec_QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQQ==",
        "xoxb-slack-token-44444444",
        "slack-signing-secret-5555555555",
        "smtp-password-6666666666",
        "redis-password-7777777777",
    ];
    let args = [
        "askbus".to_owned(),
        format!("--token={}", secrets[0]),
        format!("--agent-token=bot={}", secrets[1]),
        format!("--reviewer-token=alice={}", secrets[2]),
        format!("--link-secret={}", secrets[3]),
        "--webhook=http://127.0.0.1:9/hook".to_owned(),
        format!("--webhook-secret={}", secrets[4]),
        format!("--slack-token={}", secrets[5]),
        "--slack-channel=C0123".to_owned(),
        format!("--slack-signing-secret={}", secrets[6]),
        format!("--smtp-url=smtp://mailer:{}@127.0.0.1:25", secrets[7]),
        "--email-from=askbus@example.com".to_owned(),
        "--email-to=ops@example.com".to_owned(),
        format!("--store=redis://:{}@127.0.0.1:6379", secrets[8]),
    ];
    let cli = Cli::try_parse_from(&args).expect("flags parse");
    let printed = format!("{cli:?} {cli:#?}");
    for secret in secrets {
        assert!(!printed.contains(secret), "{secret} in {printed}");
    }
    assert!(printed.contains("Secret(***)"), "{printed}");
    let settings = cli.settings().expect("valid");
    assert!(
        settings
            .http
            .tokens
            .iter()
            .any(|token| token.identity().name.as_ref() == "alice"),
        "the reviewer's token is configured"
    );
}

#[test]
fn credentials_have_names_and_roles_and_roles_separate_duties() {
    let identities = |args: &[&str]| {
        let settings = settings(args).expect("valid");
        let identities: Vec<_> = settings
            .http
            .tokens
            .iter()
            .map(|token| (token.identity().clone(), token.scope().clone()))
            .collect();
        (identities, settings.duties.never_the_asker)
    };
    // One plain token: an admin, everyone is the same identity, so no asker rule.
    let (plain, separated) = identities(&["--token", "s3cret"]);
    assert_eq!(
        plain,
        [(Identity::new("admin", Role::Admin), TokenScope::AllSessions)]
    );
    assert!(!separated);
    // A scoped --token is an agent of its session: it never both asks and answers.
    let (named, separated) = identities(&[
        "--token",
        "root1,root2,bot@deploy",
        "--agent-token",
        "agent-1=a1secret@deploy",
        "--reviewer-token",
        "alice=alicesecret,bob=bobsecret@deploy",
    ]);
    assert_eq!(
        named,
        [
            (
                Identity::new("admin-1", Role::Admin),
                TokenScope::AllSessions
            ),
            (
                Identity::new("admin-2", Role::Admin),
                TokenScope::AllSessions
            ),
            (
                Identity::new("agent@deploy", Role::Agent),
                TokenScope::Session("deploy".into())
            ),
            (
                Identity::new("agent-1", Role::Agent),
                TokenScope::Session("deploy".into())
            ),
            (
                Identity::new("alice", Role::Reviewer),
                TokenScope::AllSessions
            ),
            (
                Identity::new("bob", Role::Reviewer),
                TokenScope::Session("deploy".into())
            ),
        ]
    );
    assert!(separated, "with roles, nobody decides what they asked");
    let refused = |args: &[&str], expected: &str| {
        let message = settings(args).expect_err("refused").to_string();
        assert!(message.contains(expected), "{message:?} lacks {expected:?}");
    };
    refused(&["--agent-token", "nosecret"], "NAME=SECRET");
    refused(&["--agent-token", "=secret"], "the name before `=`");
    refused(&["--reviewer-token", "alice="], "the secret is empty");
    refused(&["--reviewer-token", "local=secret"], "`local` names");
    refused(
        &["--agent-token", "twin=one", "--reviewer-token", "twin=two"],
        "two credentials are named \"twin\"",
    );
    refused(
        &["--agent-token", "bot=same", "--reviewer-token", "rev=same"],
        "the credentials \"bot\" and \"rev\" have the same secret",
    );
    // Secrets never show in debug output.
    let settings = settings(&["--reviewer-token", "alice=alicesecret"]).expect("valid");
    assert!(!format!("{:?}", settings.http.tokens).contains("alicesecret"));
}

#[test]
fn bad_flags_are_refused_with_a_clear_message() {
    let check = |args: &[&str], expected: &str| {
        let message = settings(args).expect_err("refused").to_string();
        assert!(
            message.contains(expected),
            "{message:?} should contain {expected:?}"
        );
    };
    check(&["--store", "postgres://localhost"], "use `sqlite:PATH`");
    check(&["--store", "postgres://localhost"], "redis://HOST:PORT");
    check(
        &["--store", "redis://127.0.0.1:6379?prefix="],
        "the prefix must be",
    );
    check(&["--store", "redis://127.0.0.1:notaport"], "bad --store");
    check(
        &["--store", "rediss://u:secret@host:6380"],
        "TLS is not built in",
    );
    let tls = settings(&["--store", "rediss://u:secret@host:6380"]).expect_err("refused");
    assert!(!tls.to_string().contains("secret"), "{tls}");
    check(&["--store", "sqlite:"], "use `sqlite:PATH`");
    check(&["--listen", "no-such-host.invalid:4717"], "HOST:PORT");
    check(&["--token", "@session"], "empty");
    check(&["--token", "secret@"], "empty");
    check(&["--cors-origin", "*"], "is not a browser origin");
    check(
        &["--cors-origin", "localhost:3000"],
        "is not a browser origin",
    );
    check(
        &["--cors-origin", "https://ui.example.com/"],
        "is not a browser origin",
    );
    check(
        &["--mcp-wait-secs", "0"],
        "--mcp-wait-secs must be a positive number of seconds",
    );
    check(
        &["--mcp-wait-secs=-1"],
        "--mcp-wait-secs must be a positive number of seconds",
    );
}

#[test]
fn an_mcp_call_waits_45_s_at_most_unless_told_otherwise() {
    let wait = |args: &[&str]| settings(args).expect("valid").mcp.answer_wait;
    assert_eq!(wait(&[]), std::time::Duration::from_secs(45));
    assert_eq!(
        wait(&["--mcp-wait-secs", "20.5"]),
        std::time::Duration::from_millis(20_500)
    );
}

#[test]
fn quotas_default_to_the_issues_figures_and_to_the_open_files_limit() {
    let defaults = settings(&[]).expect("valid");
    assert_eq!(
        (defaults.pending.per_session, defaults.pending.total),
        (1_000, 100_000)
    );
    // One token or none: nobody to share with, so no per-token limit of its own.
    assert_eq!(defaults.pending.per_account, usize::MAX);
    assert_eq!(defaults.http.max_event_streams_per_token, usize::MAX);
    let files = rlimit::Resource::NOFILE.get().expect("a Unix limit").0;
    assert_eq!(
        defaults.http.event_streams.limit(),
        askbus_server::event_streams_for(files)
    );

    // Two tokens: each may hold half.
    let shared = settings(&["--token", "one,two", "--max-event-streams", "101"]).expect("valid");
    assert_eq!(shared.pending.per_account, 50_000);
    assert_eq!(shared.http.event_streams.limit(), 101);
    assert_eq!(shared.http.max_event_streams_per_token, 51);
}

#[test]
fn quota_flags_set_the_limits_and_refuse_zero_by_name() {
    let set = settings(&[
        "--token",
        "one,two",
        "--max-pending-per-session",
        "5",
        "--max-pending",
        "50",
        "--max-pending-per-token",
        "20",
        "--max-event-streams",
        "30",
        "--max-event-streams-per-token",
        "3",
    ])
    .expect("valid");
    assert_eq!(
        (
            set.pending.per_session,
            set.pending.total,
            set.pending.per_account
        ),
        (5, 50, 20)
    );
    assert_eq!(set.http.event_streams.limit(), 30);
    assert_eq!(set.http.max_event_streams_per_token, 3);
    let set = settings(&[
        "--max-history-records",
        "200",
        "--max-history-mib",
        "4",
        "--max-memory-history-mib",
        "64",
        "--max-event-history-mib",
        "2",
    ])
    .expect("valid");
    let history = set.http.history;
    assert_eq!(
        (
            history.records_per_session,
            history.bytes_per_session,
            history.bytes_in_memory
        ),
        (200, 4 * 1024 * 1024, 64 * 1024 * 1024)
    );
    assert_eq!(set.bus.history_bytes, 2 * 1024 * 1024);
    let defaults = settings(&[]).expect("valid");
    assert_eq!(
        (
            defaults.bus.history_bytes,
            defaults.http.history.bytes_in_memory
        ),
        (16 * 1024 * 1024, 256 * 1024 * 1024),
        "what large requests hold after they ended is bounded by default"
    );

    for flag in [
        "--max-pending-per-session",
        "--max-pending",
        "--max-pending-per-token",
        "--max-event-streams",
        "--max-event-streams-per-token",
        "--max-history-records",
        "--max-history-mib",
        "--max-memory-history-mib",
        "--max-event-history-mib",
    ] {
        let refused = settings(&[flag, "0"]).expect_err("zero refuses everything");
        assert_eq!(refused.to_string(), format!("{flag} must be at least 1"));
    }
    let refused = settings(&["--max-history-mib", "32", "--max-memory-history-mib", "16"])
        .expect_err("the histories in all below one session's");
    assert_eq!(
        refused.to_string(),
        "--max-memory-history-mib (16) must be at least --max-history-mib (32): the histories \
         in memory together hold at least one session's"
    );
}

/// `--audit-key` is read at start: a key that cannot be read, or is no Ed25519 secret key,
/// is refused naming the file and how to make one; a good one signs.
#[test]
fn an_audit_key_is_loaded_or_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("audit.key");
    let key = askbus_audit::generate_key().unwrap();
    askbus_audit::write_key_files(&good, &key).unwrap();
    let loaded = settings(&["--audit-key", good.to_str().unwrap()]).expect("valid");
    assert_eq!(
        loaded.audit_key.map(|key| key.to_bytes()),
        Some(key.to_bytes())
    );
    assert!(settings(&[]).expect("valid").audit_key.is_none());

    let public = dir.path().join("audit.key.pub");
    let missing = dir.path().join("missing.key");
    for bad in [&public, &missing] {
        match settings(&["--audit-key", bad.to_str().unwrap()]) {
            Err(error @ ConfigError::AuditKey(_)) => {
                let said = error.to_string();
                assert!(said.contains(bad.to_str().unwrap()), "{said}");
                assert!(said.contains("askbus audit keygen"), "{said}");
            }
            other => panic!("{bad:?} was not refused: {other:?}"),
        }
    }
}

/// Two secrets, as `whsec_` and base64 of 24 and 32 bytes.
const SECRET_A: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const SECRET_B: &str = "whsec_C2FtcGxlLXNlY3JldC1mb3ItYXNrYnVzLXRlc3RzIQ==";

#[test]
fn each_webhook_can_have_a_secret_of_its_own() {
    let configured = settings(&[
        "--webhook",
        "https://a.example/hook",
        "--webhook",
        "https://b.example/hook",
        "--webhook-secret",
        &format!("https://a.example/hook={SECRET_A}"),
        "--webhook-secret",
        &format!("https://b.example/hook={SECRET_B}"),
    ])
    .expect("valid");
    let signatures: Vec<String> = configured
        .notify
        .expect("webhooks")
        .targets
        .iter()
        .map(|target| match target {
            askbus_notify::Target::Webhook { secret, .. } => secret.sign("msg_1", 1, "{}"),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(signatures.len(), 2);
    assert_ne!(signatures[0], signatures[1], "one secret per receiver");

    // A webhook without a secret of its own, and no default: refused.
    let refused = settings(&[
        "--webhook",
        "https://a.example/hook",
        "--webhook",
        "https://b.example/hook",
        "--webhook-secret",
        &format!("https://a.example/hook={SECRET_A}"),
    ]);
    assert!(
        matches!(refused, Err(ConfigError::WebhookSecretRequired)),
        "{refused:?}"
    );
    // A secret for a URL no webhook has: refused, naming it as the start-up line names
    // webhooks, without its path (a Slack-style path is the receiver's secret).
    let refused = settings(&[
        "--webhook",
        "https://a.example/hook",
        "--webhook-secret",
        &format!("https://c.example/services/T0/path-secret={SECRET_A}"),
    ])
    .unwrap_err();
    let said = refused.to_string();
    assert!(said.contains("https://c.example/..."), "{said}");
    assert!(!said.contains("path-secret"), "{said}");
}

#[test]
fn answer_links_go_only_to_recipients_of_every_session() {
    // A reviewer of one session would be sent every session's requests.
    let refused = settings(&[
        "--reviewer-token",
        "carol=carol-secret-0123456789@ops",
        "--webhook",
        "carol=https://hooks.example/carol",
        "--webhook-secret",
        SECRET_A,
    ])
    .unwrap_err();
    assert!(refused.to_string().contains("every session"), "{refused}");
    settings(&[
        "--reviewer-token",
        "alice=alice-secret-0123456789",
        "--webhook",
        "alice=https://hooks.example/alice",
        "--webhook-secret",
        SECRET_A,
    ])
    .expect("a reviewer of every session is a recipient");
}

#[test]
fn recipients_over_a_shared_store_need_a_link_secret() {
    let shared = [
        "--store",
        "redis://127.0.0.1:6379",
        "--webhook",
        "local=https://hooks.example/me",
        "--webhook-secret",
        SECRET_A,
    ];
    let refused = settings(&shared).unwrap_err();
    assert!(
        matches!(refused, ConfigError::LinkSecretRequired),
        "{refused}"
    );
    let mut with_secret = shared.to_vec();
    with_secret.extend(["--link-secret", "0123456789abcdef0123456789abcdef"]);
    settings(&with_secret).expect("valid with a link secret");
    // Without recipients, links are never sent: no secret needed.
    settings(&[
        "--store",
        "redis://127.0.0.1:6379",
        "--webhook",
        "https://hooks.example/all",
        "--webhook-secret",
        SECRET_A,
    ])
    .expect("valid");
}

/// README and the Dockerfile promise that every flag of the server has an `ASKBUS_*`
/// variable (a container is configured by its environment), and README's table lists it
/// beside the flag.
#[test]
fn every_flag_has_its_environment_variable_in_readme() {
    use clap::CommandFactory;
    let readme = include_str!("../README.md");
    let command = Cli::command();
    let flags: Vec<_> = command
        .get_arguments()
        .filter(|arg| {
            arg.get_long().is_some() && !matches!(arg.get_id().as_str(), "help" | "version")
        })
        .collect();
    assert!(flags.len() > 30, "{} flags", flags.len());
    let mut wrong = Vec::new();
    for flag in flags {
        let long = flag.get_long().expect("a long flag");
        let Some(env) = flag.get_env().and_then(|env| env.to_str()) else {
            wrong.push(format!("--{long} has no variable"));
            continue;
        };
        if !env.starts_with("ASKBUS_") {
            wrong.push(format!("--{long}: {env}"));
        }
        match readme
            .lines()
            .find(|line| line.starts_with(&format!("| `--{long}` |")))
        {
            Some(row) if row.contains(&format!("`{env}`")) => {}
            Some(row) => wrong.push(format!("README's row of --{long} lacks `{env}`: {row}")),
            None => wrong.push(format!("README's table has no row for --{long}")),
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// Every event stream holds a connection: streams that could take every connection would
/// leave `/health` and every reply waiting in the backlog, so such flags are refused, and
/// the default connections keep room beside the streams.
#[test]
fn event_streams_stay_below_the_connections() {
    let refused =
        settings(&["--max-connections", "500", "--max-event-streams", "500"]).expect_err("refused");
    assert!(
        matches!(
            refused,
            ConfigError::StreamsTakeEveryConnection {
                streams: 500,
                connections: 500
            }
        ),
        "{refused}"
    );
    let roomy = settings(&["--max-event-streams", "100000"]).expect("valid");
    assert!(
        roomy.connections.max_connections >= 100_064,
        "{}",
        roomy.connections.max_connections
    );
    let given =
        settings(&["--max-connections", "500", "--max-event-streams", "400"]).expect("valid");
    assert_eq!(given.connections.max_connections, 500);
    // Given alone, the connections bound the default streams, with room beside them.
    let alone = settings(&["--max-connections", "200"]).expect("valid");
    assert_eq!(alone.connections.max_connections, 200);
    let streams = alone.http.event_streams.limit();
    assert!(streams <= 136, "{streams}");
}
