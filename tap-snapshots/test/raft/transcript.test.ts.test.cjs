/* IMPORTANT
 * This snapshot file is auto-generated, but designed for humans.
 * It should be checked into source control and tracked carefully.
 * Re-generate by setting TAP_SNAPSHOT=1 and running tests.
 * Make sure to inspect the output below.  Do not ignore changes!
 */
'use strict'
exports[`test/raft/transcript.test.ts > TAP > a lagging follower is probed back with reject hints > must match snapshot 1`] = `
n1->n2 heartbeat t2 commit=6 read=0
n1->n3 heartbeat t2 commit=4 read=0
n2->n1 heartbeatResp t2 read=0
n3->n1 heartbeatResp t2 read=0
n1->n3 append t2 prev=6/2 entries=[] commit=6
n3->n1 appendResp t2 index=6 reject hint=4
n1->n3 append t2 prev=4/2 entries=[5/2:a 6/2:b] commit=6
n3->n1 appendResp t2 index=6
`

exports[`test/raft/transcript.test.ts > TAP > election with pre-vote, then a proposal and its commit > must match snapshot 1`] = `
n1->n2 preVote t2 last=3/1
n1->n3 preVote t2 last=3/1
n2->n1 preVoteResp t2 grant
n3->n1 preVoteResp t2 grant
n1->n2 vote t2 last=3/1
n1->n3 vote t2 last=3/1
n2->n1 voteResp t2 grant
n3->n1 voteResp t2 grant
n1 becomes leader in term 2
n1->n2 append t2 prev=3/1 entries=[4/2:noop] commit=3
n1->n3 append t2 prev=3/1 entries=[4/2:noop] commit=3
n2->n1 appendResp t2 index=4
n3->n1 appendResp t2 index=4
n1->n2 append t2 prev=4/2 entries=[] commit=4
n2->n1 appendResp t2 index=4
n1->n2 append t2 prev=4/2 entries=[5/2:a] commit=4
n1->n3 append t2 prev=4/2 entries=[5/2:a] commit=4
n2->n1 appendResp t2 index=5
n3->n1 appendResp t2 index=5
n1->n2 append t2 prev=5/2 entries=[] commit=5
n1->n3 append t2 prev=5/2 entries=[] commit=5
n2->n1 appendResp t2 index=5
n3->n1 appendResp t2 index=5
`

exports[`test/raft/transcript.test.ts > TAP > leadership transfer > must match snapshot 1`] = `
n1->n2 timeoutNow t2
n2->n1 vote t3 last=4/2 force
n2->n3 vote t3 last=4/2 force
n1->n2 voteResp t3 grant
n3->n2 voteResp t3 grant
n2 becomes leader in term 3
n2->n1 append t3 prev=4/2 entries=[5/3:noop] commit=4
n2->n3 append t3 prev=4/2 entries=[5/3:noop] commit=4
n1->n2 appendResp t3 index=5
n3->n2 appendResp t3 index=5
n2->n1 append t3 prev=5/3 entries=[] commit=5
n1->n2 appendResp t3 index=5
`
