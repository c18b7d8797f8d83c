fn main() {
    let dir = std::env::args().nth(1).unwrap();
    let rec = podlife::observe::Recording::read(std::path::Path::new(&dir)).unwrap();
    let tl = rec.timeline();
    for i in &tl.instances { println!("{} #{} start={:?} fin={:?} exit={:?} {:?} logs={}", i.container, i.instance, i.started_at, i.finished_at, i.exit_code, i.reason, tl.logs_of(&i.container, Some(i.instance)).count()); }
    for e in &tl.events { println!("{} {} {:?} n={} {:?}", e.received, e.reason, e.container, e.count, e.time); }
    println!("{:?}", tl.stats);
    println!("snapshots {}", tl.snapshots.len());
    if std::env::var("LOGS").is_ok() { for l in &tl.logs { println!("{} #{} {} {}", l.container, l.instance, l.time, l.text); } }
}
#[allow(dead_code)]
fn x() {}
