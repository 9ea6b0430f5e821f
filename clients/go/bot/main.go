// Command battleline-bot plays one match against a Battle Line Online engine's hosted AI
// through the public gRPC API (the stubs generated from protos/ by ../build.sh):
//
//	battleline-bot --target 127.0.0.1:50051 --ai 3
//
// It creates a match against the hosted AI (LobbyService.CreateMatch), waits for the AI to
// take its seat, then plays uniformly random legal actions from its own view
// (GameService.SubmitAction with the view's version as expected_version and a fresh action
// id), taking the AI's moves from the Watch stream. It prints the result and exits 0 once
// the match is over; 1 on any refusal or when the match does not end in time. A call the
// engine refuses for now (RESOURCE_EXHAUSTED with a RetryInfo delay, such as `rate-limited`)
// or cannot answer (UNAVAILABLE: restarting) is sent again, the same request, until it
// passes or the time is up.
package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"flag"
	"fmt"
	"math/big"
	"os"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "battleline/gen/battlelinev1"
)

const callTimeout = 10 * time.Second

// minRetryDelay is the shortest wait before a resend, whatever delay a refusal names.
const minRetryDelay = 10 * time.Millisecond

// resends counts the calls sent again by resent, for the final report.
var resends int

// seat is one seat of one match: the services, the match and the seat's bearer token.
type seat struct {
	game     pb.GameServiceClient
	watch    pb.WatchServiceClient
	matchID  string
	token    string
	requests int
}

// ctx carries the seat token as `authorization: Bearer <token>` metadata.
func (s *seat) ctx(parent context.Context) context.Context {
	return metadata.AppendToOutgoingContext(parent, "authorization", "Bearer "+s.token)
}

// resent makes a call until it passes, fails in a way waiting will not mend, or ctx ends:
// a refusal that says when to come back (RetryInfo) waits that long, UNAVAILABLE a pause
// growing to 2 s. Each try gets callTimeout.
func resent(ctx context.Context, call func(context.Context) error) error {
	pause := 100 * time.Millisecond
	for {
		callCtx, cancel := context.WithTimeout(ctx, callTimeout)
		err := call(callCtx)
		cancel()
		wait, again := retryDelay(err, pause)
		if !again {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		resends++
		if pause < 2*time.Second {
			pause *= 2
		}
	}
}

// retryDelay says whether err is worth sending again, and after how long.
func retryDelay(err error, pause time.Duration) (time.Duration, bool) {
	refusal := status.Convert(err)
	switch refusal.Code() {
	case codes.Unavailable:
		return pause, true
	case codes.ResourceExhausted:
		for _, detail := range refusal.Details() {
			if info, ok := detail.(*errdetails.RetryInfo); ok && info.RetryDelay != nil {
				if delay := info.RetryDelay.AsDuration(); delay > minRetryDelay {
					return delay, true
				}
				return minRetryDelay, true // never a busy loop on a zero delay
			}
		}
	}
	return 0, false
}

func (s *seat) view(parent context.Context) (*pb.MatchView, error) {
	var response *pb.GetViewResponse
	err := resent(s.ctx(parent), func(ctx context.Context) (err error) {
		response, err = s.game.GetView(ctx, &pb.GetViewRequest{MatchId: s.matchID})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("GetView: %w", err)
	}
	return response.View, nil
}

// playRandom submits one random legal action decided on view and returns the view after it.
// ABORTED means the match moved on since view (stale-version): fetch it and decide again.
// A resend keeps the action id, so an action whose answer was lost is not applied twice.
func (s *seat) playRandom(parent context.Context, view *pb.MatchView) (*pb.MatchView, error) {
	action := view.LegalActions[randomIndex(len(view.LegalActions))]
	request := &pb.SubmitActionRequest{MatchId: s.matchID, ExpectedVersion: view.Version,
		ActionId: newActionID(), Actions: []string{action}}
	var response *pb.SubmitActionResponse
	err := resent(s.ctx(parent), func(ctx context.Context) (err error) {
		response, err = s.game.SubmitAction(ctx, request)
		return err
	})
	if status.Code(err) == codes.Aborted {
		return s.view(parent)
	}
	if err != nil {
		return nil, fmt.Errorf("SubmitAction %q: %w", action, err)
	}
	s.requests++
	return response.View, nil
}

// views streams this seat's view after each event (Watch with include_views) into a
// channel, closed when the stream ends.
func (s *seat) views(ctx context.Context, after uint64) (<-chan *pb.MatchView, error) {
	stream, err := s.watch.Watch(s.ctx(ctx), &pb.WatchRequest{MatchId: s.matchID,
		IncludeViews: true, ResumeAfter: &after})
	if err != nil {
		return nil, fmt.Errorf("Watch: %w", err)
	}
	out := make(chan *pb.MatchView)
	go func() {
		defer close(out)
		for {
			message, err := stream.Recv()
			if err != nil { // io.EOF or a broken stream: the caller asks for the view
				return
			}
			if message.View == nil {
				continue
			}
			select {
			case out <- message.View:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

func myTurn(view *pb.MatchView) bool {
	return view.Phase == pb.MatchPhase_MATCH_PHASE_PLAYING && len(view.LegalActions) > 0
}

// play waits for the AI to join, then plays until the match is over.
func play(ctx context.Context, s *seat) (*pb.MatchView, error) {
	view, err := s.view(ctx)
	if err != nil {
		return nil, err
	}
	for view.Phase == pb.MatchPhase_MATCH_PHASE_WAITING {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("nobody took the other seat: %w", ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
		if view, err = s.view(ctx); err != nil {
			return nil, err
		}
	}
	streamCtx, stop := context.WithCancel(ctx)
	defer stop()
	views, err := s.views(streamCtx, view.LastEventNumber)
	if err != nil {
		return nil, err
	}
	for view.Phase != pb.MatchPhase_MATCH_PHASE_FINISHED {
		if myTurn(view) {
			if view, err = s.playRandom(ctx, view); err != nil {
				return nil, err
			}
			continue
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("the match did not end in time: %w", ctx.Err())
		case next, open := <-views:
			if !open { // the stream ended: ask for the view, and watch again from it
				if view, err = s.view(ctx); err != nil {
					return nil, err
				}
				if views, err = s.views(streamCtx, view.LastEventNumber); err != nil {
					return nil, err
				}
			} else if next.Version > view.Version {
				// A streamed view can be older than the answer to our own last action.
				view = next
			}
		}
	}
	return view, nil
}

func main() {
	target := flag.String("target", "127.0.0.1:50051", "the engine's gRPC address (host:port)")
	level := flag.Uint("ai", 1, "the hosted AI's level, 1-5")
	ruleset := flag.String("ruleset", "standard", "standard, basic or deck52")
	timeout := flag.Duration("timeout", 5*time.Minute, "give up after this long")
	flag.Parse()

	if err := run(*target, uint32(*level), *ruleset, *timeout); err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}
}

func run(target string, level uint32, ruleset string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn, err := grpc.DialContext(ctx, target, grpc.WithInsecure(), grpc.WithBlock())
	if err != nil {
		return fmt.Errorf("dial %s: %w", target, err)
	}
	defer conn.Close()

	lobby := pb.NewLobbyServiceClient(conn)
	// A seat secret makes the create safe to send again: a resend whose first answer was
	// lost is answered with the same match, never a second one.
	request := &pb.CreateMatchRequest{
		Options:     &pb.MatchOptions{Ruleset: ruleset},
		Seat:        pb.SeatChoice_SEAT_CHOICE_RANDOM,
		Opponent:    &pb.Opponent{Kind: pb.OpponentKind_OPPONENT_KIND_AI, AiLevel: level},
		SeatOptions: &pb.SeatOptions{AutoClaim: true, DisplayName: "go"},
		SeatSecret:  newSeatSecret(),
	}
	var created *pb.CreateMatchResponse
	err = resent(ctx, func(callCtx context.Context) (err error) {
		created, err = lobby.CreateMatch(callCtx, request)
		return err
	})
	if err != nil {
		return fmt.Errorf("CreateMatch: %w", err)
	}
	fmt.Printf("created match %s against the hosted AI level %d, seat %s\n",
		created.MatchId, level, created.Seat)

	s := &seat{game: pb.NewGameServiceClient(conn), watch: pb.NewWatchServiceClient(conn),
		matchID: created.MatchId, token: created.SeatToken}
	view, err := play(ctx, s)
	if err != nil {
		return err
	}
	fmt.Printf("match over: winner %s by %s after %d requests, %d sent again (match %s, "+
		"version %d)\n", view.Winner, view.EndReason, s.requests, resends, view.MatchId,
		view.Version)
	return nil
}

// newActionID is a fresh id for SubmitAction (the engine answers a repeated id with the
// stored response, so a retry after a lost answer applies nothing twice).
func newActionID() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// newSeatSecret is a fresh CreateMatch seat_secret: 32 random bytes, base64url (43
// characters), as the shipped clients draw it; the match id and seat token derive from it.
func newSeatSecret() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func randomIndex(n int) int {
	i, err := rand.Int(rand.Reader, big.NewInt(int64(n)))
	if err != nil {
		panic(err)
	}
	return int(i.Int64())
}
