//! Driving `wrk`, the HTTP load generator, and reading its report.
//!
//! wrk runs as a separate process with a Lua script ([`ReplyScript`]) that makes every
//! request a `POST /question/{id}/reply` with `{"answers":[["A"],["B","C"]]}` to an id of
//! its own: each wrk thread reads its slice of a pre-generated id list (one file per
//! thread, ids dealt round-robin) line by line as it sends. A thread that reaches the end
//! of its slice starts over; against askbus that answers already-resolved questions (409,
//! or 404 once forgotten), which the bench counts and reports, so pools are sized to
//! outlast the run.
//!
//! The ids are read from the file per request, never loaded into a Lua table: a table of
//! a million strings makes every LuaJIT collection (one every few thousand requests, since
//! each request is a new string) traverse it, which doubled wrk's processor time per
//! request (measured: 31.6 µs against 16.8 µs with a 50,000-id table, and 13 to 16 µs
//! streaming either size) and paused its threads with responses unread. On a machine
//! where wrk and the server share the cores, that cost the server with the large pool
//! throughput, and the pauses showed as its latency. Streamed, the generator's cost is the
//! same for every pool size, so the baseline and askbus runs are loaded alike.
//!
//! The figures come from wrk's own `--latency` report ([`WrkReport::parse`]): requests per
//! second, the latency distribution, and non-2xx and socket error counts.
//!
//! wrk is not installed here: `cargo xtask bench` installs it (`apt-get install -y wrk`)
//! before running the bench; [`find`] says so when it is missing.

use std::fmt::Display;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::LoadError;

/// How one wrk run loads the server.
#[derive(Debug, Clone, Copy)]
pub struct WrkRun {
    /// wrk threads; must equal the number of slices the ids were dealt into.
    pub threads: usize,
    /// Open connections, shared among the threads.
    pub connections: usize,
    /// How long to send requests, in whole seconds.
    pub duration: Duration,
}

/// wrk's report of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct WrkReport {
    /// Completed requests (any status).
    pub requests: u64,
    /// How long the run took, as wrk measured it.
    pub elapsed: Duration,
    /// `Requests/sec`.
    pub requests_per_second: f64,
    /// Latency percentiles: 50, 75, 90, 99.
    pub p50: Duration,
    /// 75th percentile.
    pub p75: Duration,
    /// 90th percentile.
    pub p90: Duration,
    /// 99th percentile.
    pub p99: Duration,
    /// Responses whose status was not 2xx or 3xx.
    pub non_success: u64,
    /// Socket errors of every kind (connect, read, write, timeout).
    pub socket_errors: u64,
    /// The report as wrk printed it.
    pub output: String,
}

/// The Lua script and id files wrk reads, in a directory of their own.
pub struct ReplyScript {
    /// Holds `reply.lua` and the id slices.
    directory: PathBuf,
}

/// Question ids dealt into one file per wrk thread: `<prefix>-<thread>.txt`.
#[derive(Debug, Clone)]
pub struct IdSlices {
    /// Path of the files without `-<thread>.txt`.
    prefix: PathBuf,
    /// How many slices (one per wrk thread).
    threads: usize,
}

/// The script: each thread gets a slice number in `setup`, opens its id file in `init`, and
/// reads the next id for each reply in `request`.
const REPLY_LUA: &str = r#"-- askbus http_load: every request replies to a distinct question id.
-- Each thread reads its own slice of ids ($ASKBUS_WRK_IDS-<slice>.txt) a line per request:
-- a table of every id would make each garbage collection walk it (see wrk.rs).
local next_slice = 0

function setup(thread)
  thread:set("slice", next_slice)
  next_slice = next_slice + 1
end

function init(args)
  local path = os.getenv("ASKBUS_WRK_IDS") .. "-" .. slice .. ".txt"
  ids = assert(io.open(path, "r"))
  if ids:read("*l") == nil then
    error("no question ids in " .. path)
  end
  ids:seek("set", 0)
  body = '{"answers":[["A"],["B","C"]]}'
  headers = { ["Content-Type"] = "application/json" }
end

function request()
  local id = ids:read("*l")
  if id == nil then
    ids:seek("set", 0)
    id = ids:read("*l")
  end
  return wrk.format("POST", "/question/" .. id .. "/reply", headers, body)
end
"#;

/// The path of `wrk`.
///
/// # Errors
///
/// [`LoadError::WrkUnavailable`], saying how to get it, when it is not on `PATH`.
pub fn find() -> Result<PathBuf, LoadError> {
    find_program("wrk").ok_or_else(|| {
        LoadError::WrkUnavailable(
            "run the bench with `cargo xtask bench`, which installs it with apt-get, or \
             install it yourself (Debian/Ubuntu: `sudo apt-get install wrk`, macOS: \
             `brew install wrk`)"
                .to_owned(),
        )
    })
}

impl ReplyScript {
    /// Writes the script into `directory` (created if needed).
    ///
    /// # Errors
    ///
    /// The directory or file cannot be written.
    pub fn create(directory: &Path) -> Result<Self, LoadError> {
        std::fs::create_dir_all(directory)?;
        std::fs::write(directory.join("reply.lua"), REPLY_LUA)?;
        Ok(Self {
            directory: directory.to_owned(),
        })
    }

    /// Deals `ids` round-robin into one file per thread, named after `name`.
    ///
    /// # Errors
    ///
    /// A file cannot be written.
    pub fn write_ids(
        &self,
        name: &str,
        ids: &[impl Display],
        threads: usize,
    ) -> Result<IdSlices, LoadError> {
        let prefix = self.directory.join(name);
        let slices = IdSlices { prefix, threads };
        for thread in 0..threads {
            let mut file = BufWriter::new(std::fs::File::create(slices.path(thread))?);
            for id in ids.iter().skip(thread).step_by(threads) {
                writeln!(file, "{id}")?;
            }
            file.flush()?;
        }
        Ok(slices)
    }

    /// Runs wrk with `run` against `base_url` (`http://127.0.0.1:port`), the requests
    /// going to the ids of `slices`.
    ///
    /// # Errors
    ///
    /// wrk cannot be started, fails, or prints a report without the expected figures.
    ///
    /// # Panics
    ///
    /// When `slices` was not dealt for `run.threads` threads.
    pub fn run(
        &self,
        wrk: &Path,
        slices: &IdSlices,
        run: WrkRun,
        base_url: &str,
    ) -> Result<WrkReport, LoadError> {
        assert_eq!(
            slices.threads, run.threads,
            "the ids are dealt into one slice per wrk thread"
        );
        let output = Command::new(wrk)
            .arg(format!("--threads={}", run.threads))
            .arg(format!("--connections={}", run.connections))
            .arg(format!("--duration={}s", run.duration.as_secs().max(1)))
            .arg("--latency")
            .arg("--script")
            .arg(self.directory.join("reply.lua"))
            .arg(base_url)
            .env("ASKBUS_WRK_IDS", &slices.prefix)
            .output()?;
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        if !output.status.success() {
            return Err(LoadError::WrkFailed {
                status: output.status,
                stderr: format!("{}{stdout}", String::from_utf8_lossy(&output.stderr)),
            });
        }
        WrkReport::parse(&stdout)
    }

    /// Removes the directory and everything in it.
    ///
    /// # Errors
    ///
    /// It cannot be removed.
    pub fn remove(self) -> Result<(), LoadError> {
        Ok(std::fs::remove_dir_all(&self.directory)?)
    }
}

impl IdSlices {
    fn path(&self, thread: usize) -> PathBuf {
        let mut path = self.prefix.clone().into_os_string();
        path.push(format!("-{thread}.txt"));
        path.into()
    }
}

impl WrkReport {
    /// Reads the report wrk prints with `--latency`.
    ///
    /// # Errors
    ///
    /// [`LoadError::WrkReport`] naming the first figure that is missing.
    pub fn parse(output: &str) -> Result<Self, LoadError> {
        let mut requests = None;
        let mut elapsed = None;
        let mut requests_per_second = None;
        let mut percentiles: [Option<Duration>; 4] = [None; 4];
        let mut non_success = 0;
        let mut socket_errors = 0;
        for line in output.lines().map(str::trim) {
            let words: Vec<&str> = line.split_whitespace().collect();
            if let Some(rest) = line.strip_prefix("Requests/sec:") {
                requests_per_second = rest.trim().parse::<f64>().ok();
            } else if let Some(rest) = line.strip_prefix("Non-2xx or 3xx responses:") {
                non_success = rest.trim().parse().unwrap_or(0);
            } else if let Some(rest) = line.strip_prefix("Socket errors:") {
                // `connect 0, read 0, write 0, timeout 0`
                socket_errors = rest
                    .split(',')
                    .filter_map(|kind| kind.split_whitespace().nth(1)?.parse::<u64>().ok())
                    .sum();
            } else if let [count, "requests", "in", took, ..] = words.as_slice() {
                requests = count.parse().ok();
                elapsed = parse_duration(took.trim_end_matches(','));
            } else if let [percent, value] = words.as_slice() {
                let slot = match *percent {
                    "50%" => 0,
                    "75%" => 1,
                    "90%" => 2,
                    "99%" => 3,
                    _ => continue,
                };
                percentiles[slot] = parse_duration(value);
            }
        }
        let missing = |missing| LoadError::WrkReport {
            missing,
            output: output.to_owned(),
        };
        Ok(Self {
            requests: requests.ok_or_else(|| missing("request count"))?,
            elapsed: elapsed.ok_or_else(|| missing("run duration"))?,
            requests_per_second: requests_per_second.ok_or_else(|| missing("Requests/sec"))?,
            p50: percentiles[0].ok_or_else(|| missing("50% latency"))?,
            p75: percentiles[1].ok_or_else(|| missing("75% latency"))?,
            p90: percentiles[2].ok_or_else(|| missing("90% latency"))?,
            p99: percentiles[3].ok_or_else(|| missing("99% latency"))?,
            non_success,
            socket_errors,
            output: output.to_owned(),
        })
    }
}

/// A duration as wrk prints one: `423.55us`, `1.07ms`, `10.01s`, `1.50m`, `2.00h`.
fn parse_duration(text: &str) -> Option<Duration> {
    let split = text.find(|c: char| c.is_ascii_alphabetic())?;
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let seconds = match unit {
        "us" => number / 1e6,
        "ms" => number / 1e3,
        "s" => number,
        "m" => number * 60.0,
        "h" => number * 3600.0,
        _ => return None,
    };
    Duration::try_from_secs_f64(seconds).ok()
}

/// The first `name` on `PATH` that is a file.
fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|directory| directory.join(name))
        .find(|candidate| candidate.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPORT: &str = "Running 10s test @ http://127.0.0.1:40311
  2 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     1.07ms  423.55us  10.59ms   82.40%
    Req/Sec    30.32k     2.17k   34.78k    71.00%
  Latency Distribution
     50%    1.00ms
     75%    1.22ms
     90%    1.51ms
     99%  812.00us
  603413 requests in 10.01s, 71.93MB read
  Socket errors: connect 0, read 2, write 0, timeout 1
  Non-2xx or 3xx responses: 12
Requests/sec:  60285.48
Transfer/sec:      7.19MB
";

    /// Durations parsed from decimal text, to the microsecond.
    fn micros(duration: Duration) -> u64 {
        (duration.as_secs_f64() * 1e6).round() as u64
    }

    #[test]
    fn reads_the_latency_report() {
        let report = WrkReport::parse(REPORT).expect("a complete report");
        assert_eq!(report.requests, 603_413);
        assert_eq!(micros(report.elapsed), 10_010_000);
        assert!((report.requests_per_second - 60_285.48).abs() < 1e-6);
        assert_eq!(micros(report.p50), 1_000);
        assert_eq!(micros(report.p75), 1_220);
        assert_eq!(micros(report.p90), 1_510);
        assert_eq!(micros(report.p99), 812);
        assert_eq!(report.non_success, 12);
        assert_eq!(report.socket_errors, 3);
    }

    #[test]
    fn names_what_is_missing() {
        let without_latency = REPORT.replace("99%", "98%");
        let error = WrkReport::parse(&without_latency).expect_err("no p99");
        assert!(error.to_string().contains("99% latency"), "{error}");
    }

    #[test]
    fn reads_wrk_durations() {
        let check = |text: &str, expected_micros: Option<u64>| {
            assert_eq!(parse_duration(text).map(micros), expected_micros, "{text}");
        };
        check("423.55us", Some(424));
        check("2.00s", Some(2_000_000));
        check("1.50m", Some(90_000_000));
        check("1.00h", Some(3_600_000_000));
        check("12", None);
        check("1.0xs", None);
    }

    #[test]
    fn deals_ids_round_robin() {
        let directory =
            std::env::temp_dir().join(format!("askbus-wrk-test-{}", std::process::id()));
        let script = ReplyScript::create(&directory).expect("a writable temp dir");
        let slices = script
            .write_ids("ids", &["a", "b", "c", "d", "e"], 2)
            .expect("written");
        let read = |thread| std::fs::read_to_string(slices.path(thread)).expect("a slice");
        assert_eq!(read(0), "a\nc\ne\n");
        assert_eq!(read(1), "b\nd\n");
        script.remove().expect("removed");
    }
}
