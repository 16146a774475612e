//! The audit benchmark's floor: read a CSV file with the csv crate's
//! `ByteRecord` loop and count the rows, nothing else.
//!
//! `cargo run --release --example csv_count -- FILE.csv`

fn main() {
    let path = std::env::args().nth(1).expect("usage: csv_count FILE.csv");
    let file = std::fs::File::open(&path).expect("open FILE");
    let mut r = csv::ReaderBuilder::new()
        .has_headers(true)
        .buffer_capacity(1 << 16)
        .from_reader(file);
    let mut record = csv::ByteRecord::new();
    let mut rows = 0u64;
    while r.read_byte_record(&mut record).expect("read") {
        rows += 1;
    }
    println!("{rows}");
}
