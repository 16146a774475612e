use super::*;

#[test]
fn yaml_maps_lists_and_lines() {
    let docs = parse_yaml(
        "http:\n  routers:\n    api:\n      rule: \"Host(`a`)\"\n      middlewares: [lim, 'two']\n  n: ~\n",
    )
    .unwrap();
    assert_eq!(docs.len(), 1);
    let api = docs[0]
        .get("http")
        .unwrap()
        .get("routers")
        .unwrap()
        .get("api")
        .unwrap();
    assert_eq!(api.line, 4);
    assert_eq!(api.get("rule").unwrap().str(), Some("Host(`a`)"));
    let m = api.get("middlewares").unwrap();
    assert_eq!(m.line, 5);
    let names: Vec<_> = m.items().iter().map(|n| n.str().unwrap()).collect();
    assert_eq!(names, ["lim", "two"]);
    assert!(docs[0].get("http").unwrap().get("n").unwrap().is_null());
    assert!(docs[0].get_ci("HTTP").is_some());
    assert!(docs[0].get("HTTP").is_none());
}

#[test]
fn yaml_documents_anchors_and_merges() {
    let docs = parse_yaml(
        "---\nbase: &b {average: 10, burst: 5}\nlim:\n  <<: *b\n  burst: 7\n---\nkind: Middleware\n---\n",
    )
    .unwrap();
    assert_eq!(docs.len(), 3);
    let lim = docs[0].get("lim").unwrap();
    assert_eq!(lim.get("average").unwrap().int(), Some(10));
    assert_eq!(lim.get("burst").unwrap().int(), Some(7));
    assert_eq!(docs[1].get("kind").unwrap().str(), Some("Middleware"));
    assert!(docs[2].is_null());
}

#[test]
fn yaml_errors_name_the_line() {
    let e = parse_yaml("a: 1\nb: [1, 2\nc: 3\n").unwrap_err();
    assert!(e.line >= 2, "{e:?}");
    let e = parse_yaml("a: *nope\n").unwrap_err();
    assert_eq!(e.line, 1);
}

#[test]
fn toml_tables_and_lines() {
    let doc = parse_toml(
        "[http.routers.api]\n  rule = \"Path(`/x`)\"\n  middlewares = [\"lim\"]\n\n[http.middlewares.lim.rateLimit]\n  average = 1_000\n  period = \"1m\"\n",
    )
    .unwrap();
    let http = doc.get("http").unwrap();
    let api = http.get("routers").unwrap().get("api").unwrap();
    assert_eq!(api.line, 2);
    assert_eq!(
        api.get("middlewares").unwrap().items()[0].str(),
        Some("lim")
    );
    let rl = http
        .get("middlewares")
        .unwrap()
        .get("lim")
        .unwrap()
        .get("rateLimit")
        .unwrap();
    assert_eq!(rl.get("average").unwrap().int(), Some(1000));
    assert_eq!(rl.get("average").unwrap().line, 6);
    assert_eq!(rl.get("period").unwrap().str(), Some("1m"));
}

#[test]
fn toml_errors_name_the_line() {
    let e = parse_toml("a = 1\nb = = 2\n").unwrap_err();
    assert_eq!(e.line, 2, "{e:?}");
}

#[test]
fn aliases_cannot_blow_a_document_up() {
    let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..9 {
        let p = i - 1;
        text.push_str(&format!(
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
        ));
    }
    let e = parse_yaml(&text).unwrap_err();
    assert!(e.message.contains("million"), "{e:?}");
}
