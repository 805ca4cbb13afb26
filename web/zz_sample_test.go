package web_test

// TEMPORARY: a hand-written GET /composition until openenv serves it.

const sampleComposition = `{"world":"company","world_version":"0.1.0","nodes":[
{"path":"main","world":"company","world_version":"0.1.0","scope":null,"aliases":[],"schema_hash":"7b208652f2252b22f8412993945da8ae633beed52033f0d93fa3f44d34304d76","file":"state.sqlite"},
{"path":"payments","world":"payments","world_version":"1.0.0","scope":null,"aliases":["shop/payments"],"schema_hash":"0ab9a45400946dd87323c418887b9d89eff995178e7a69921db1a3fef9f543be","file":"state.payments.sqlite"},
{"path":"shop","world":"shop","world_version":"1.0.0","scope":null,"aliases":[],"schema_hash":"17e7a9c29263ac38042fb5e140a3ca02de2c8d8946287fcf1a4c63d0773e8167","file":"state.shop.sqlite"},
{"path":"payments_eu","world":"payments","world_version":"1.0.0","scope":"eu","aliases":[],"schema_hash":"0ab9a45400946dd87323c418887b9d89eff995178e7a69921db1a3fef9f543be","file":"state.payments_eu.sqlite"},
{"path":"chat","world":"chat","world_version":"1.0.0","scope":null,"aliases":[],"schema_hash":"046b86e775c73963de69fd1626812ecc4b0ce439c189f5882fdaa98b34e24d03","file":"state.chat.sqlite"}],
"edges":[
{"from":"main","name":"payments","to":"payments","prefix":"pay_","allow":null,"block":null,"store":null},
{"from":"main","name":"shop","to":"shop","prefix":"shop_","allow":null,"block":null,"store":null},
{"from":"main","name":"payments_eu","to":"payments_eu","prefix":"eu_","allow":null,"block":null,"store":"eu"},
{"from":"main","name":"chat","to":"chat","prefix":"chat_","allow":null,"block":null,"store":null},
{"from":"shop","name":"payments","to":"payments","prefix":"","allow":["create_charge"],"block":null,"store":null}]}`
