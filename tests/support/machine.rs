//! A machine whose crash loses the page cache: the gateway binary on the embedded
//! store over `tests/support/lost_page_cache.c`, an LD_PRELOAD library (built here with
//! the system's C compiler) that keeps an image of the data directory as of each file's
//! last sync. A crash is a SIGKILL, then the image in the data directory's place.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use super::Gateway;

/// A gateway binary on the embedded store, over the library, on a data directory whose
/// synced image is kept beside it.
pub struct Machine {
    gw: Gateway,
    data: PathBuf,
    image: PathBuf,
    _dir: tempfile::TempDir,
}

impl Machine {
    pub fn start(settings: &[(&str, &str)]) -> Machine {
        let dir = tempfile::tempdir().expect("temp dir");
        let (data, image) = (dir.path().join("data"), dir.path().join("image"));
        for d in [&data, &image] {
            std::fs::create_dir(d).expect("make a directory");
        }
        let text = |p: &Path| p.to_str().expect("a UTF-8 path").to_string();
        let env = [
            ("LD_PRELOAD", text(library())),
            ("LOST_PAGE_CACHE_DATA", text(&data)),
            ("LOST_PAGE_CACHE_IMAGE", text(&image)),
        ];
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let gw = Gateway::process_on_data(&data, &env, settings);
        Machine {
            gw,
            data,
            image,
            _dir: dir,
        }
    }

    pub fn bootstrap(&self) -> String {
        self.gw.bootstrap()
    }

    /// The data directory the gateway runs on.
    pub fn data_dir(&self) -> &Path {
        &self.data
    }

    /// The crash: SIGKILL, and of the data only what was synced stays.
    pub fn power_off(&mut self) {
        self.gw.kill();
        std::fs::remove_dir_all(&self.data).expect("remove the data directory");
        std::fs::rename(&self.image, &self.data).expect("the image in its place");
        // The next run's image starts as what is on the disk now.
        let copied = Command::new("cp")
            .arg("-a")
            .arg(&self.data)
            .arg(&self.image)
            .status()
            .expect("run cp");
        assert!(copied.success(), "copying the data to the image failed");
    }

    /// Starts the gateway again on what the crash left, on the same port.
    pub fn power_on(&mut self) {
        self.gw.restart_after_kill();
    }

    pub fn crash(&mut self) {
        self.power_off();
        self.power_on();
    }
}

/// The library, built once per test run from `lost_page_cache.c`.
fn library() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/lost_page_cache.c");
        let out = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("lost_page_cache-{}.so", std::process::id()));
        let built = Command::new("cc")
            .args([
                "-O2",
                "-Wall",
                "-Wno-format-truncation",
                "-shared",
                "-fPIC",
                "-o",
            ])
            .arg(&out)
            .arg(&source)
            .args(["-ldl", "-lpthread"])
            .status()
            .expect("run cc");
        assert!(built.success(), "building {} failed", source.display());
        out
    })
}
