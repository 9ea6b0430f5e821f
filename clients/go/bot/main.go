// Command battleline-bot plays one match against a Battle Line Online engine's hosted AI
// through the public gRPC API (the stubs generated from protos/ by ../build.sh):
//
//	battleline-bot --target 127.0.0.1:50051 --ai 3
//
// It creates a match against the hosted AI (LobbyService.CreateMatch), waits for the AI to
// take its seat, then plays uniformly random legal actions from its own view
// (GameService.SubmitAction with the view's version as expected_version and a fresh action
// id), taking the AI's moves from the Watch stream. It prints the result and exits 0 once
// the match is over; 1 on any refusal or when the match does not end in time.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"math/big"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "battleline/gen/battlelinev1"
)

const callTimeout = 10 * time.Second

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

func (s *seat) view(parent context.Context) (*pb.MatchView, error) {
	ctx, cancel := context.WithTimeout(s.ctx(parent), callTimeout)
	defer cancel()
	response, err := s.game.GetView(ctx, &pb.GetViewRequest{MatchId: s.matchID})
	if err != nil {
		return nil, fmt.Errorf("GetView: %w", err)
	}
	return response.View, nil
}

// playRandom submits one random legal action decided on view and returns the view after it.
// ABORTED means the match moved on since view (stale-version): fetch it and decide again.
func (s *seat) playRandom(parent context.Context, view *pb.MatchView) (*pb.MatchView, error) {
	action := view.LegalActions[randomIndex(len(view.LegalActions))]
	request := &pb.SubmitActionRequest{MatchId: s.matchID, ExpectedVersion: view.Version,
		ActionId: newActionID(), Actions: []string{action}}
	ctx, cancel := context.WithTimeout(s.ctx(parent), callTimeout)
	defer cancel()
	response, err := s.game.SubmitAction(ctx, request)
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
	createCtx, createCancel := context.WithTimeout(ctx, callTimeout)
	created, err := lobby.CreateMatch(createCtx, &pb.CreateMatchRequest{
		Options:     &pb.MatchOptions{Ruleset: ruleset},
		Seat:        pb.SeatChoice_SEAT_CHOICE_RANDOM,
		Opponent:    &pb.Opponent{Kind: pb.OpponentKind_OPPONENT_KIND_AI, AiLevel: level},
		SeatOptions: &pb.SeatOptions{AutoClaim: true, DisplayName: "go"},
	})
	createCancel()
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
	fmt.Printf("match over: winner %s by %s after %d requests (match %s, version %d)\n",
		view.Winner, view.EndReason, s.requests, view.MatchId, view.Version)
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

func randomIndex(n int) int {
	i, err := rand.Int(rand.Reader, big.NewInt(int64(n)))
	if err != nil {
		panic(err)
	}
	return int(i.Int64())
}
